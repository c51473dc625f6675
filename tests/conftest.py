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


@pytest.fixture(scope='session')
def playwright():
    """Playwright's sync API, started once for the session: it runs an event loop of its own, so a second one
    (another test module's) could not start while this one lives."""
    try: from playwright.sync_api import sync_playwright
    except ImportError: pytest.fail('playwright is not installed: it is a dev dependency (`make install` installs it)')
    with sync_playwright() as p: yield p
