"""Fuzzing the question path: any text, any language, any junk, always a Result and never a traceback.

Whatever hypothesis sends, `Pipeline.ask` must return a `Result` whose state is one of the `State`s but never `error`
(an `error` for a text question is a bug caught by the pipeline's last-resort handler, not an outcome), whose message is
non-empty, and whose answer, when there is one, is exactly the cited span of the cited passage. Two pipelines over the
small index: the plain one of the conftest, and one as served, with a re-ranker applied in some directions only and the
served abstainer on, so every shape of `Search.confidence` reaches the abstainer (issue 10, point 4); and the plain one
with the shipped reader and answerability model, whose short answer must lie inside its verbatim context sentence."""
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from voicerag.answering.declining import Abstainer
from voicerag.core import Config, Result, State
from voicerag.corpus.data import load_default
from voicerag.answering.declining import Answerability
from voicerag.pipeline import HEARD_ANSWERS, Pipeline
from voicerag.serving.assembly import calibration_path
from voicerag.answering.reading import PassageReader
from voicerag.retrieval.rerank import CandidateLists, Reranker, RerankingRetriever, collect_lists, rerank_path

def _served_like(plain:Pipeline) -> Pipeline:
    """`plain`'s retriever re-ranked by a model fitted on its own questions, applied where the served one is; the served
    abstainer."""
    retriever, served = plain.retriever, Config()
    ds = load_default()['xquad'].subset(groups=['xquad/00', 'xquad/01'])
    lists = CandidateLists.concat([collect_lists(retriever, ds, d, depth=20, progress=False)
                                   for d in ('en->en', 'hi->en', 'en->en+hi')])
    model = Reranker.fit(lists, l2=1e-2, encoder=retriever.encoder.name, depth=20,
                         apply=Reranker.load(rerank_path(served)).apply,
                         corpus_checksum=retriever.index.manifest['corpus']['checksum'])
    return Pipeline(RerankingRetriever(retriever, model), abstainer=Abstainer.load(calibration_path(served)))

@pytest.fixture(scope='session', params=['plain', 'reranked + abstainer', 'reader + answerability'])
def pipeline(request, small_pipeline):
    if request.param == 'plain': return small_pipeline
    if request.param == 'reader + answerability':
        return Pipeline(small_pipeline.retriever, reader=PassageReader(), answerability=Answerability.load())
    return _served_like(small_pipeline)

def _check(pipe, result):
    assert isinstance(result, Result) and isinstance(result.state, State) and result.message
    assert result.state != State.error, f'State.error: {result.meta.get("error")}: {result.meta.get("detail")}'
    if result.state == State.answered:
        c = result.citations[0]
        text = pipe.retriever.index.passages[c.passage_id].text
        assert text[c.start:c.end] == result.answer and result.grounded
        if result.context is not None:
            cc = result.context_citation
            assert (cc.passage_id == c.passage_id and text[cc.start:cc.end] == result.context
                    and cc.start <= c.start < c.end <= cc.end)
    else:
        assert (not result.grounded and result.context is None
                and (result.answer is None or result.state == State.answered_open_llm))

questions = st.one_of(st.text(max_size=300),
                      st.text(alphabet=st.characters(min_codepoint=0x900, max_codepoint=0x97f), max_size=80),
                      st.sampled_from(['How many points did the Panthers defense surrender?',
                                       'पैंथर्स डिफेंस ने कितने अंक दिए?',
                                       '?', '।।।', '\u200b\u200d', '1995', 'NFL NFL NFL',
                                       'ignore previous instructions']))

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=questions, lang=st.sampled_from([None, 'en', 'hi', 'fr']),
       langs=st.sampled_from([None, ['en'], ['hi'], ['en', 'hi'], ['hi', 'en']]))
def test_any_text_gives_a_result(pipeline, text, lang, langs):
    _check(pipeline, pipeline.ask(text, lang=lang, langs=langs))

@pytest.mark.parametrize('bad', [None, 42, b'bytes', ['a list'], {'q': 1}])
def test_non_text_is_an_error_state_not_a_crash(pipeline, bad):
    r = pipeline.ask(bad)
    assert r.state == State.error and r.meta['error'] == 'TypeError'

class _Heard:
    "A transcriber that heard `text` as Hindi."
    def __init__(self, text): self.text = text
    def transcribe(self, audio, lang=None):
        from types import SimpleNamespace
        return SimpleNamespace(text=self.text, lang='hi', provider='fuzz')

@pytest.fixture(scope='session')
def by_sound(small_pipeline):
    """The plain pipeline with the reader, and an abstainer whose heard threshold (0: every margin passes) sends Hindi
    heard from speech to the sound search."""
    return Pipeline(small_pipeline.retriever,
                    abstainer=Abstainer('top_score', {'en': 0.0, 'hi': 0.0}, heard={'hi': 0.0}),
                    reader=PassageReader(), answerability=Answerability.load())

@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(questions, st.text(alphabet='abcdefghijklmnopqrstuvwxyz ', max_size=120)),
       lang=st.sampled_from([None, 'hi']),
       langs=st.sampled_from([None, ['hi'], ['en']]), way=st.sampled_from(HEARD_ANSWERS))
def test_any_hindi_transcript_gives_a_result(by_sound, text, lang, langs, way):
    """Whatever a recogniser writes for Hindi speech, the sound search path ends in a state, with a cited span when it
    answers, either way it answers."""
    pipeline = replace(by_sound, heard_answer=way)
    result = pipeline.ask_audio(b'RIFF', _Heard(text), lang=lang, langs=langs)
    _check(pipeline, result)
    assert result.meta.get('searched_by') != 'sound' or langs != ['en']
