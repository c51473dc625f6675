"""Drift check: a fresh fast evaluation of the served system must reproduce the committed results.

The committed `nbs/eval_results.json` is what `voicerag-eval` measured (and what the README shows). This test reruns its
fast part (retrieval and answers on the test split, about a minute once the index exists, built first when missing) with
the same code, data and models, so it is not a new sample to place inside an interval: every headline must come out with
the committed mean over the same questions. A change that moves a headline at all is a change of the system, and
`make eval` records its numbers with it.
"""
import copy, json
import pytest
from voicerag.fitting.evaluate import DRIFT_TOLERANCE, HEADLINES, drift, evaluate, headline
from voicerag.paths import results_path

@pytest.fixture(scope='module')
def committed() -> dict:
    return json.loads(results_path().read_text(encoding='utf-8'))


@pytest.fixture(scope='module')
def fresh() -> dict:
    return evaluate(fast=True, progress=False)


def test_committed_results_hold_every_headline(committed):
    missing = [' / '.join(p) for p in HEADLINES if (headline(committed, p) or {}).get('mean') is None]
    assert not missing, f'{results_path()} lacks headline metrics: {missing}; rerun voicerag-eval'


def test_drift_sees_any_move_beyond_the_tolerance(committed):
    """The comparison itself (`evaluate.drift`, which `voicerag-eval --check` uses too), on the committed file: equal
    passes; a move past the tolerance either way, or new questions, fail."""
    assert drift(committed, committed) == []
    path = HEADLINES[-1]
    for change, flagged in ((DRIFT_TOLERANCE / 2, False), (-DRIFT_TOLERANCE / 2, False), (2 * DRIFT_TOLERANCE, True),
                            (-2 * DRIFT_TOLERANCE, True)):
        moved = copy.deepcopy(committed)
        headline(moved, path)['mean'] += change
        assert bool(drift(committed, moved)) == flagged, (change, drift(committed, moved))
    other = copy.deepcopy(committed)
    headline(other, path)['n'] += 1
    assert 'measured over' in drift(committed, other)[0]


def test_same_system_as_committed(committed, fresh):
    assert fresh['config'] == committed['config'], 'the committed results were measured with another configuration'
    assert fresh['reranker'] == committed['reranker'], 'the committed results were measured with another re-ranker'
    assert fresh['abstainer'] == committed['abstainer'], 'the committed results were measured with another abstainer'
    assert fresh['answerer'] == committed['answerer'], ('the committed results were measured with another reader or '
                                                        'answerability model')


def test_every_headline_as_committed(committed, fresh):
    problems = drift(committed, fresh)
    assert not problems, ('the served system no longer gives the committed results (`make eval` if the change '
                          'is meant):\n' + '\n'.join(problems))
