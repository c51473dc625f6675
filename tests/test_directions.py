"""Every direction a question can take ends in a valid Result, never `State.error` (issue 10, point 4).

Which passage languages are searched (`langs`) decides whether the re-ranker orders the hits (its file applies it per
direction, 10_rerank), and with it the shape of `Search.confidence`: re-ranked (`rerank_top` a number), not re-ranked
(`None`), or no re-ranker at all (no such key). The calibrated abstainer (11_declining) must handle all three; it once
raised KeyError on the second, so `ask(q, langs=['en'])` ended in `State.error`.

Every combination of asker language (forced 'en' or 'hi', or detected), `langs` and re-ranker (on or off) is asked, for
English and Hindi questions, with the served abstainer on: over the small hashing index of the conftest (a re-ranker
trained on it in a second), and over the served default index with its re-ranker (`serving_retriever`), built first when
missing (a fresh clone, or this file run alone) as every other test that needs it does.
"""
import pytest
from voicerag.answering.declining import Abstainer
from voicerag.core import Config, Result, State
from voicerag.corpus.data import load_default
from voicerag.pipeline import Pipeline
from voicerag.serving.assembly import calibration_path, ensure_index, serving_retriever
from voicerag.retrieval.rerank import (RERANK_CONFIDENCE, CandidateLists, Reranker, RerankingRetriever, collect_lists,
                                       direction_key, rerank_path)

ASKERS = ('en', 'hi', None)                                  # None: the asker's language is detected from the script
LANGS = (None, ['en'], ['hi'], ['en', 'hi'], ['hi', 'en'])
QUESTIONS = ('How many points did the Panthers defense surrender?', 'What is the Saxon Garden in Polish?',
             'Who is the president of France?',                                  # not in either index's articles
             'पैंथर्स डिफ़ेंस ने कितने अंक दिए?', 'पोलिश में सैक्सन गार्डन क्या है?', 'भारत की राजधानी क्या है?')
# an asker forced to the other language costs the served e5 a second or two
SERVED_QUESTIONS = QUESTIONS[0], QUESTIONS[4]
SERVED = Config()


@pytest.fixture(scope='module')
def served_abstainer() -> Abstainer:
    "The abstainer the served pipeline reads (a logistic model on the re-ranker's confidence too)."
    abstainer = Abstainer.load(calibration_path(SERVED))
    assert (abstainer.rule == 'logistic'
            and 'rerank_top' in abstainer.model.features), 'the served abstainer no longer reads the re-ranker'
    return abstainer


def small_reranker(retriever) -> Reranker:
    "A re-ranker fitted on the small index's own XQuAD questions, applied in the directions the served one is."
    ds = load_default()['xquad'].subset(groups=['xquad/00', 'xquad/01'])
    lists = CandidateLists.concat([collect_lists(retriever, ds, d, depth=20, progress=False)
                                   for d in ('en->en', 'hi->en', 'en->en+hi', 'hi->en+hi')])
    return Reranker.fit(lists, l2=1e-2, encoder=retriever.encoder.name, depth=20,
                        corpus_checksum=retriever.index.manifest['corpus']['checksum'],
                        apply=Reranker.load(rerank_path(SERVED)).apply)


@pytest.fixture(scope='module')
def small(small_pipeline, served_abstainer) -> dict:
    plain = small_pipeline.retriever
    reranked = RerankingRetriever(plain, small_reranker(plain))
    return {name: Pipeline(r, abstainer=served_abstainer) for name, r in (('plain', plain), ('reranked', reranked))}


@pytest.fixture(scope='module')
def served(served_abstainer) -> dict:
    """The served retriever (`serving_retriever`: the default index, built when missing, and its re-ranker) and the bare
    one under it."""
    folder = ensure_index(SERVED)
    from voicerag.retrieval.encoders import make_encoder
    from voicerag.retrieval.index import load_index
    encoder = make_encoder(SERVED.encoder, cache_size=SERVED.query_cache_size)
    retriever = serving_retriever(load_index(folder, encoder_name=encoder.name, dense_backend=SERVED.dense_backend),
                                  encoder, SERVED)
    assert isinstance(retriever, RerankingRetriever), 'the served retriever has no re-ranker'
    return {'reranked': Pipeline(retriever, abstainer=served_abstainer, k=SERVED.top_k),
            'plain': Pipeline(retriever.retriever, abstainer=served_abstainer, k=SERVED.top_k)}


def problems(pipe:Pipeline, text:str) -> list[str]:
    "What is wrong with the Results of `text` asked in every (asker, langs) combination; empty when nothing is."
    out, reranks = [], isinstance(pipe.retriever, RerankingRetriever)
    for lang in ASKERS:
        for langs in LANGS:
            r, where = pipe.ask(text, lang=lang, langs=langs), f'{text!r} lang={lang} langs={langs}'
            if not (isinstance(r, Result) and isinstance(r.state, State) and r.message):
                out.append(f'{where}: not a valid Result: {r!r}')
            elif r.state == State.error: out.append(f'{where}: error {r.meta.get("error")}: {r.meta.get("detail")}')
            elif r.state == State.answered:
                c = r.citations[0]
                if pipe.retriever.index.passages[c.passage_id].text[c.start:c.end] != r.answer or not r.grounded:
                    out.append(f'{where}: the answer is not the cited span')
            if r.confidence and (set(RERANK_CONFIDENCE) & set(r.confidence)
                                 != (set(RERANK_CONFIDENCE) if reranks else set())):
                out.append(f'{where}: confidence keys {sorted(r.confidence)}')
    return out


@pytest.mark.parametrize('rerank', ['reranked', 'plain'])
@pytest.mark.parametrize('text', QUESTIONS)
def test_small_pipeline_every_direction(small, rerank, text):
    assert not (found := problems(small[rerank], text)), '\n'.join(found)


@pytest.mark.parametrize('rerank', ['reranked', 'plain'])
@pytest.mark.parametrize('text', SERVED_QUESTIONS)
def test_served_pipeline_every_direction(served, rerank, text):
    assert not (found := problems(served[rerank], text)), '\n'.join(found)


@pytest.mark.parametrize('which', ['small', 'served'])
def test_abstainer_judges_exactly_the_reranked_searches(request, which):
    "The abstainer judges a search when it carries the re-ranker's confidence and passes it unjudged otherwise."
    pipes = request.getfixturevalue(which)
    seen = set()
    for rerank, pipe in pipes.items():
        abstainer, index = pipe.abstainer, pipe.retriever.index
        for text in QUESTIONS:
            for langs in LANGS:
                c = pipe.retriever.search(text, k=pipe.k, langs=langs).confidence
                if rerank == 'plain': assert not set(RERANK_CONFIDENCE) & set(c)
                else:
                    applied = pipe.retriever.reranker.applies(direction_key(index, text, langs))
                    assert c['reranked'] == applied and (c['rerank_top'] is None) != applied, (text, langs, c)
                    seen.add(applied)
                for lang in ASKERS:
                    v = abstainer.check(c, text, lang or 'en')
                    assert v.facts['judged'] == bool(c.get('reranked')), (text, langs, c, v)
                    if not v.facts['judged']: assert v.ok and v.facts['missing'] == ['rerank_top', 'rerank_margin']
    assert seen == {True, False}, 'the questions did not reach both an applied and a not-applied direction'
