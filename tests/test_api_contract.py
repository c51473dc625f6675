"""The HTTP API keeps the contract its schema states: Schemathesis, all its checks, against `voicerag-serve` over the
default index.

`/openapi.json` is the API's contract (`nbs/serving/92_serve.ipynb`, *The schema is the contract*). Schemathesis
generates requests from it, valid and invalid ones, and checks every answer: no 5xx, each status, media type and body as
declared, invalid requests refused and valid ones answered, the token required where the schema says so. A fixed seed
and a bound on the examples per route keep the run repeatable and well under two minutes on two cores."""
import json, os, re, signal, subprocess, sys, time
from pathlib import Path
import httpx, pytest
import schemathesis
from voicerag.serving.api import AUDIO_TYPES

# Schemathesis sends no audio/* body of its own (it gives up on a route that takes them, with a failed health check).
# The CLI loads this file as its hooks module (SCHEMATHESIS_HOOKS, below): this line has it send them as octet-stream.
schemathesis.serializer.alias([t for t in AUDIO_TYPES if t.startswith('audio/')], 'application/octet-stream')

BIN = Path(sys.executable).parent
TOKEN = 'contract-test-token'
SEED, EXAMPLES = 20261206, 100             # examples per route and phase
OPERATIONS = 5                             # POST /v1/ask, POST /v1/ask-audio, GET /v1/health, /v1/ready, /metrics

def wait_until_ready(url:str, process, log:Path, timeout:float=300.0):
    "Until `/v1/ready` says ready; fails with the server's log if it exits or takes longer than `timeout` s."
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f'voicerag-serve exited with {process.returncode}:\n{log.read_text()[-3000:]}')
        try:
            if httpx.get(url + '/v1/ready', timeout=5).status_code == 200: return
        except httpx.TransportError: pass
        time.sleep(0.2)
    pytest.fail(f'voicerag-serve was not ready after {timeout:.0f} s:\n{log.read_text()[-3000:]}')

@pytest.fixture(scope='module')
def server(tmp_path_factory) -> str:
    """voicerag-serve as configured, over the default index (built first when missing), with a token, on a free loopback
    port."""
    from voicerag.core import free_port
    from voicerag.core import Config
    from voicerag.serving.assembly import ensure_index
    ensure_index(Config.load())
    port, log = free_port(), tmp_path_factory.mktemp('serve')/'serve.log'
    env = {**os.environ, 'VOICERAG_API_TOKEN': TOKEN, 'PYTHONUNBUFFERED': '1'}
    with open(log, 'w') as out:
        process = subprocess.Popen([BIN/'voicerag-serve', '--port', str(port)], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f'http://127.0.0.1:{port}'
        wait_until_ready(url, process, log)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try: process.wait(timeout=30)
        except subprocess.TimeoutExpired: os.killpg(process.pid, signal.SIGKILL); process.wait()

def failures(output:str) -> str:
    "Schemathesis's account of what failed (each with the request that reproduces it), else the end of its output."
    first = re.search(r'^=+ (FAILURES|ERRORS) =+$', output, re.M)
    return output[first.start():] if first else output[-3000:]

def test_the_api_keeps_its_schema(server, tmp_path):
    report = tmp_path/'report.json'
    command = [BIN/'st', 'run', f'{server}/openapi.json', '--checks', 'all', '--seed', str(SEED),
               '--max-examples', str(EXAMPLES),
               '--header', f'Authorization: Bearer {TOKEN}', '--generation-database', 'none', '--no-color',
               '--report', 'json', '--report-json-path', str(report)]
    run = subprocess.run(command, env={**os.environ, 'SCHEMATHESIS_HOOKS': __file__}, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    status = run.returncode
    assert status == 0, (f'the API does not keep its schema (st exited with '
                         f'{status}):\n{failures(run.stdout + run.stderr)}')
    summary = json.loads(report.read_text())
    assert summary['operations']['tested'] == OPERATIONS, summary['operations']
    phases = {phase: summary['phases'][phase]['status'] for phase in ('coverage', 'fuzzing')}
    assert phases == {'coverage': 'success', 'fuzzing': 'success'}, phases
    assert not {kind: found for kind, found in summary['warnings'].items() if found}, summary['warnings']
