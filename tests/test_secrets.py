"""No API key may reach a notebook's saved outputs, a Result, or a log line.

The notebooks plant fake keys in the environment to exercise the model clients; this
suite reads every saved output of every notebook and fails if one of those keys, or
anything shaped like a Groq or Anthropic key, appears there. It also
runs the pipeline's open-knowledge path end to end with a planted key and checks the
Result and the captured logs."""
import json, logging, re
from pathlib import Path
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
KEY_SHAPES = re.compile(r'gsk_[A-Za-z0-9_]{12,}|sk-ant-[A-Za-z0-9_-]{12,}')

def _outputs(nb_path: Path):
    nb = nbformat.read(nb_path, as_version=4)
    for i, cell in enumerate(nb.cells):
        for out in cell.get('outputs', []):
            yield i, json.dumps(out, ensure_ascii=False)

def _planted_in_sources() -> set[str]:
    "Every literal key-shaped string the notebooks and tests plant, so none of them can leak unnoticed."
    texts = [p.read_text(encoding='utf-8') for p in [*ROOT.glob('nbs/**/*.ipynb'), *ROOT.glob('tests/*.py')]]
    return {m.group(0) for t in texts for m in re.finditer(r'gsk_[A-Za-z0-9_]{12,}|sk-ant-[A-Za-z0-9_-]{12,}', t)}

@pytest.mark.parametrize('nb_path', sorted(ROOT.glob('nbs/**/*.ipynb')), ids=lambda p: p.name)
def test_no_key_in_notebook_outputs(nb_path):
    planted = _planted_in_sources()
    assert planted, 'expected the notebooks to plant fake keys; the scan would be vacuous'
    for i, text in _outputs(nb_path):
        assert not any(k in text for k in planted), f'{nb_path.name} cell {i}: a planted key is in a saved output'
        assert not KEY_SHAPES.search(text), (f'{nb_path.name} cell {i}: something shaped like an API key is in a '
                                             f'saved output')

def test_scan_detects_a_leak(tmp_path):
    "The scan itself must be able to fail: a notebook with a key in its output is caught."
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('print(key)', outputs=[
        nbformat.v4.new_output('stream', name='stdout', text='gsk_leaked_key_for_the_test_1234\n')])])
    path = tmp_path/'leak.ipynb'
    nbformat.write(nb, path)
    assert any(KEY_SHAPES.search(text) for _, text in _outputs(path))

def test_pipeline_result_and_logs_hold_no_key(monkeypatch, caplog):
    from voicerag.core import Config
    from voicerag.corpus.data import Corpus, load_default
    from voicerag.retrieval.encoders import make_encoder
    from voicerag.fakes import GroqAPI, fake_llm_server
    from voicerag.answering.generate import GroqClient
    from voicerag.answering.guardrails import Thresholds
    from voicerag.retrieval.index import Retriever, build_index
    from voicerag.pipeline import Pipeline
    key = 'gsk_planted_in_pytest_5d1e9a0b7c'
    monkeypatch.setenv('GROQ_API_KEY', key)
    caplog.set_level(logging.DEBUG)
    xquad = load_default()['xquad']
    corpus = Corpus([p for p in xquad.corpus if p.doc_id.startswith('xquad/00/')])
    enc = make_encoder('hashing')
    cfg = Config(encoder=enc.name, chunkers=('sentence',), strategy_weights=(1.0,))
    retriever = Retriever(build_index(corpus, enc, cfg, progress=False), enc, cfg)
    with fake_llm_server() as server:
        client = GroqClient(base_url=server.url + '/openai/v1', timeout=2)
        pipe = Pipeline(retriever, Thresholds(top_score={'default': 0.999}), open_llm=client)
        server.script(GroqAPI.PATH, GroqAPI.ok('An answer from general knowledge.'),
                      GroqAPI.error(401, 'bad key ' + key))
        question = 'Who won Super Bowl 50? quokka-marker'
        results = [pipe.ask(question), pipe.ask(question)]
    assert [r.state.value for r in results] == ['answered_open_llm', 'error']
    dumped = json.dumps([r.to_dict() for r in results], ensure_ascii=False, default=str)
    assert key not in dumped and key not in repr(results)
    requests = [r for r in caplog.records if r.name == 'voicerag.pipeline' and hasattr(r, 'voicerag')]
    # the logs were captured: the check below is not vacuous
    assert [r.voicerag['state'] for r in requests] == ['answered_open_llm', 'error'], caplog.text
    assert [r.voicerag['request_id'] for r in requests] == [r.meta['request_id'] for r in results]
    logged = caplog.text + json.dumps([r.voicerag for r in requests], ensure_ascii=False, default=str)
    assert key not in logged
    assert 'quokka-marker' not in logged and results[0].answer not in logged
