"""`voicerag-demo` on the shared server: its tabs ask one API server, each tab's kernel stays small, and SIGINT or
SIGTERM sent to the demo process alone (not a terminal's Ctrl-C to the whole group) stops Voila, every kernel and the
server.

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
    return {**env, 'VOICERAG_HOME': str(home), 'VOICERAG_ENCODER': 'hashing', 'VOICERAG_CHUNKERS': 'sentence',
            'VOICERAG_READER': '0', 'VOICERAG_STT': 'mock', 'PYTHONUNBUFFERED': '1'}

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
        demo = subprocess.Popen([BIN/'voicerag-demo'], env=demo_env(tmp_path/'home'), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = wait_for_url(demo, log)
        for _ in range(TABS):
            page = httpx.get(url, timeout=180)
            assert page.status_code == 200 and 'vr-app' in page.text, page.text[-2000:]
        family = psutil.Process(demo.pid).children(recursive=True)
        tabs = kernels(family)
        assert len(tabs) == TABS, [p.cmdline() for p in family]
        servers = [p for p in family if any('from voicerag.cli import serve' in part for part in p.cmdline())]
        assert len(servers) == 1, [p.cmdline() for p in family]                 # one pipeline for every tab
        rss_mb = [p.memory_info().rss / 2**20 for p in tabs]
        print(f'kernel RSS per tab: {", ".join(f"{m:.0f}" for m in rss_mb)} MB; API server '
              f'{servers[0].memory_info().rss / 2**20:.0f} MB')
        assert max(rss_mb) <= TAB_LIMIT_MB, rss_mb
        os.kill(demo.pid, sig)                                                  # the demo process alone
        # stop_tree's own bound: 2 x (10 + 10 + 5) s
        assert demo.wait(timeout=90) in (0, -sig)
        _, alive = psutil.wait_procs(family, timeout=10)
        assert not alive, f'left running: {[p.cmdline() for p in alive]}'
    finally:
        try: os.killpg(demo.pid, signal.SIGKILL)
        except ProcessLookupError: pass


# `voicerag-demo --text`: a question loop over an index of one's own (built here from a two-row table in about a
# second), run as a person runs it: questions piped on stdin, or typed on a terminal (a pseudo-terminal) until Ctrl-C,
# Ctrl-D or an empty line. Each run takes about a second.
TEA = 'key,body\nd1,The first Darjeeling gardens were planted in 1841.\na1,Assam tea grows in the Brahmaputra valley.\n'
Q1, Q2 = 'Where does Assam tea grow?', 'When were the first Darjeeling gardens planted?'

@pytest.fixture(scope='module')
def tea_env(tmp_path_factory) -> dict:
    "The environment of a data home holding the index 'mine' of `TEA`, read without the reader model."
    home = tmp_path_factory.mktemp('tea')
    (home/'tea.csv').write_text(TEA)
    env = {**demo_env(home/'home'), 'VOICERAG_READER': '0', 'NO_COLOR': '1'}
    subprocess.run([BIN/'voicerag-build', '--corpus', home/'tea.csv', '--name', 'mine', '--id-col', 'key',
                    '--text-col', 'body'],
                   env=env, check=True, capture_output=True, timeout=120)
    return env

def text_demo(env:dict, stdin:bytes) -> subprocess.CompletedProcess:
    return subprocess.run([BIN/'voicerag-demo', '--text', '--name', 'mine'], input=stdin, env=env, capture_output=True,
                          timeout=120)

def test_text_demo_answers_each_piped_question(tea_env):
    done = text_demo(tea_env, f'{Q1}\n\n{Q2}\n'.encode())
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0 and 'Traceback' not in err, err
    assert out.count('\n> ') == 2, out                                          # both asked, the blank line skipped
    first, second = out.split(f'\n> {Q2}\n')
    assert (first.startswith(f'\n> {Q1}\nstate     answered\n') and 'Brahmaputra valley' in first
            and 'citation  a1' in first), out
    assert (second.startswith('state     answered\n') and '1841' in second and 'citation  d1' in second
            and 'timings   ' in second), out
    assert 'Panthers' not in out and 'पैंथर्स' not in out, out                # no built-in question asked of this index

def test_text_demo_bad_input_on_stdin(tea_env):
    done = text_demo(tea_env, b'caf\xe9?\n' + b'x' * 1_000_000 + f'\n{Q1}\n'.encode())
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 1 and 'Traceback' not in err, err            # a line skipped: status 1, the rest answered
    assert 'voicerag: line 1 of stdin is not UTF-8 text: skipped' in err, err
    assert ('state     refused_guardrail\nmessage   The question is too long' in out
            and '(65,536 characters)' in out), out
    assert f'\n> {Q1}\nstate     answered' in out, out

ANSI = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]|\r')

def read_until(fd:int, text:str, pattern:str, timeout:float=60.0) -> str:
    "`text` and what the terminal `fd` shows next, until `pattern` is in it (ANSI codes and carriage returns dropped)."
    import select
    deadline = time.monotonic() + timeout
    while not re.search(pattern, ANSI.sub('', text), re.S):
        assert time.monotonic() < deadline, f'no {pattern!r} within {timeout} s:\n{ANSI.sub("", text)[-3000:]}'
        if select.select([fd], [], [], 0.2)[0]:
            try: text += os.read(fd, 65536).decode(errors='replace')
            except OSError: break                                               # the process closed the terminal
    return text

@pytest.mark.parametrize('end', ['ctrl-c', 'ctrl-d', 'empty line'])
def test_text_demo_typed_on_a_terminal(tea_env, end):
    import pty
    master, slave = pty.openpty()
    demo = subprocess.Popen([BIN/'voicerag-demo', '--text', '--name', 'mine'], stdin=slave, stdout=slave,
                            stderr=subprocess.PIPE, env=tea_env, start_new_session=True,
                            # as in a terminal (a background job's is ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    try:
        shown = read_until(master, '', r"index 'mine', 2 passages\..*\n> $")
        for question, answer in ((Q1, 'Brahmaputra valley'), (Q2, '1841')):
            os.write(master, f'{question}\n'.encode())
            shown = read_until(master, shown,
                               f'{re.escape(question)}\nstate     answered\n.*{answer}.*\ntimings   [^\n]*\n\n> $')
        if end == 'ctrl-c': os.kill(demo.pid, signal.SIGINT)            # what the terminal sends the foreground process
        else: os.write(master, b'\x04' if end == 'ctrl-d' else b'\n')
        assert demo.wait(timeout=30) == 0
        err = demo.stderr.read().decode()
        assert 'Traceback' not in err and 'KeyboardInterrupt' not in err, err
        assert 'Panthers' not in shown, shown
    finally:
        os.close(master)
        if demo.poll() is None: os.killpg(demo.pid, signal.SIGKILL)
        demo.stderr.close()
