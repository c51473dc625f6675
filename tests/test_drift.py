"""Drift check: a fresh fast evaluation of the served system must not fall below the committed results.

The committed `nbs/eval_results.json` is what `voicerag-eval` measured (and what the README shows). This test
reruns its fast part (retrieval and answers on the test split, about a minute once the index exists) and fails
when any headline metric drops below the lower end of its committed 95% interval.
"""
import json
import pytest
from voicerag.evaluate import HEADLINES, drift, evaluate, headline
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


def test_same_system_as_committed(committed, fresh):
    assert fresh['config'] == committed['config'], 'the committed results were measured with another configuration'
    assert fresh['reranker'] == committed['reranker'], 'the committed results were measured with another re-ranker'
    assert fresh['abstainer'] == committed['abstainer'], 'the committed results were measured with another abstainer'
    assert fresh['answerer'] == committed['answerer'], 'the committed results were measured with another reader or answerability model'


def test_no_headline_drifted_below_its_interval(committed, fresh):
    problems = drift(committed, fresh)
    assert not problems, 'headline metrics drifted:\n' + '\n'.join(problems)
