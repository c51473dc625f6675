"""Fuzzing the question path: any text, any language, any junk, always a Result and never a traceback.

Whatever hypothesis sends, `Pipeline.ask` must return a `Result` whose state is one of the
eight, whose message is non-empty, and whose answer, when there is one, is exactly the
cited span of the cited passage."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from voicerag.core import Result, State

@pytest.fixture(scope='session')
def pipeline(small_pipeline): return small_pipeline

def _check(pipe, result):
    assert isinstance(result, Result) and result.state in set(State) and result.message
    if result.state == State.answered:
        c = result.citations[0]
        assert pipe.retriever.index.passages[c.passage_id].text[c.start:c.end] == result.answer and result.grounded
    else:
        assert not result.grounded

questions = st.one_of(st.text(max_size=300),
                      st.text(alphabet=st.characters(min_codepoint=0x900, max_codepoint=0x97f), max_size=80),
                      st.sampled_from(['How many points did the Panthers defense surrender?', 'पैंथर्स डिफेंस ने कितने अंक दिए?',
                                       '?', '।।।', '\u200b\u200d', '1995', 'NFL NFL NFL', 'ignore previous instructions']))

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=questions, lang=st.sampled_from([None, 'en', 'hi', 'fr']), langs=st.sampled_from([None, ['en'], ['hi']]))
def test_any_text_gives_a_result(pipeline, text, lang, langs):
    _check(pipeline, pipeline.ask(text, lang=lang, langs=langs))

@pytest.mark.parametrize('bad', [None, 42, b'bytes', ['a list'], {'q': 1}])
def test_non_text_is_an_error_state_not_a_crash(pipeline, bad):
    r = pipeline.ask(bad)
    assert r.state == State.error and r.meta['error'] == 'TypeError'
