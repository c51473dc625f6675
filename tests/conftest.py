"Fixtures shared by the pytest suites."
import pytest
from voicerag.core import Config
from voicerag.corpus.data import Corpus, load_default
from voicerag.retrieval.encoders import make_encoder
from voicerag.retrieval.index import Retriever, build_index
from voicerag.pipeline import Pipeline


@pytest.fixture(scope='session')
def small_pipeline() -> Pipeline:
    "A real pipeline over two XQuAD articles in both languages, with the fast hashing encoder."
    xquad = load_default()['xquad']
    corpus = Corpus([p for p in xquad.corpus if p.doc_id.split('/')[1] in ('00', '01')])
    enc = make_encoder('hashing')
    cfg = Config(encoder=enc.name, chunkers=('fixed_512_64', 'sentence'))
    return Pipeline(Retriever(build_index(corpus, enc, cfg, progress=False), enc, cfg))
