"""`voicerag-demo` on the shared server: its tabs ask one API server, each tab's kernel stays small, and SIGINT or SIGTERM
sent to the demo process alone (not a terminal's Ctrl-C to the whole group) stops Voila, every kernel and the server.

The data home holds a default index built with the hashing encoder and the demo uses the mock transcriber, so the test
measures processes and memory, not models (`test_browser.py` runs the real demo in Chromium)."""
import os, re, signal, subprocess, sys, time
from pathlib import Path
import httpx, psutil, pytest

BIN = Path(sys.executable).parent
TABS = 3
TAB_LIMIT_MB = 200

def demo_env(home:Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith('VOICERAG_')}
    return {**env, 'VOICERAG_HOME': str(home), 'VOICERAG_ENCODER': 'hashing', 'VOICERAG_CHUNKERS': 'sentence', 'VOICERAG_READER': '0',
            'VOICERAG_STT': 'mock', 'PYTHONUNBUFFERED': '1'}

def wait_for_url(process, log:Path, timeout:float=300.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f'voicerag-demo exited with {process.returncode}:\n{log.read_text()[-3000:]}'
        found = re.search(r'voicerag demo: (http://127\.0\.0\.1:\d+/)', log.read_text())
        if found: return found.group(1)
        time.sleep(0.2)
    raise AssertionError(f'no demo URL within {timeout} s:\n{log.read_text()[-3000:]}')

def kernels(family) -> list:
    return [p for p in family if p.is_running() and any('ipykernel' in part for part in p.cmdline())]

@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT])
def test_demo_tabs_share_one_server_and_everything_stops(tmp_path, sig):
    log = tmp_path/'demo.log'
    with open(log, 'w') as out:
        demo = subprocess.Popen([BIN/'voicerag-demo'], env=demo_env(tmp_path/'home'), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        url = wait_for_url(demo, log)
        for _ in range(TABS):
            page = httpx.get(url, timeout=180)
            assert page.status_code == 200 and 'vr-app' in page.text, page.text[-2000:]
        family = psutil.Process(demo.pid).children(recursive=True)
        tabs = kernels(family)
        assert len(tabs) == TABS, [p.cmdline() for p in family]
        servers = [p for p in family if any('voicerag.serve' in part for part in p.cmdline())]
        assert len(servers) == 1, [p.cmdline() for p in family]                 # one pipeline for every tab
        rss_mb = [p.memory_info().rss / 2**20 for p in tabs]
        print(f'kernel RSS per tab: {", ".join(f"{m:.0f}" for m in rss_mb)} MB; API server {servers[0].memory_info().rss / 2**20:.0f} MB')
        assert max(rss_mb) <= TAB_LIMIT_MB, rss_mb
        os.kill(demo.pid, sig)                                                  # the demo process alone
        assert demo.wait(timeout=90) in (0, -sig)                               # stop_tree's own bound: 2 x (10 + 10 + 5) s
        _, alive = psutil.wait_procs(family, timeout=10)
        assert not alive, f'left running: {[p.cmdline() for p in alive]}'
    finally:
        try: os.killpg(demo.pid, signal.SIGKILL)
        except ProcessLookupError: pass
