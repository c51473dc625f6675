"""The demo app end to end in a real browser: `voicerag-demo` serves it with Voila, Chromium drives it.

Chromium's fake microphone plays a WAV file: a question spoken by espeak-ng, or silence. Every page is watched while a
test uses it: a request or WebSocket to any host but this machine, or an error in the page's console, fails the test.
Set VOICERAG_SCREENSHOTS=<folder> to keep a screenshot of each test's page (for looking, not for committing).
"""
import os, shutil, signal, subprocess, sys, time, wave
from pathlib import Path
from urllib.parse import urlsplit
import pytest
from pagewatch import LOOPBACK, Watch

CHROMIUM = Path('/usr/bin/chromium')

QUESTION = 'How many points did the Panthers defense surrender?'       # XQuAD; the default index answers it
# the short answer, and what its sentence says around it
ANSWER, CONTEXT = '308', '308 points'
CITED = 'xquad/00/0@en'
HINDI_QUESTION, HINDI_CONTEXT = 'पैंथर्स डिफेंस ने कितने अंक दिए?', '308 अंक'
PAGE_READY_MS = 120_000        # a page load starts a kernel that loads the index and warms the models up
ANSWER_MS = 60_000


def _run(*cmd):
    if shutil.which(str(cmd[0])) is None: pytest.fail(f'{cmd[0]} is not installed (`make sysdeps` installs it)')
    subprocess.run([str(c) for c in cmd], check=True, timeout=60, capture_output=True)

def _seconds(wav:Path) -> float:
    with wave.open(str(wav)) as w: return w.getnframes() / w.getframerate()

@pytest.fixture(scope='session')
def spoken_question(tmp_path_factory) -> Path:
    "The English question spoken by espeak-ng, as 16 kHz mono 16-bit WAV with a little silence around it."
    folder = tmp_path_factory.mktemp('audio')
    _run('espeak-ng', '-v', 'en', '-s', '150', '-w', folder/'raw.wav', QUESTION)
    _run('sox', folder/'raw.wav', '-r', '16000', '-c', '1', '-b', '16', folder/'question.wav', 'pad', '0.2', '1.0')
    return folder/'question.wav'

@pytest.fixture(scope='session')
def pipeline(server):
    "The served pipeline in this process, over the index the demo serves: what a misheard question should get."
    from voicerag.core import Config
    from voicerag.serving.assembly import load_pipeline
    return load_pipeline(Config.load())

@pytest.fixture(scope='session')
def silence(tmp_path_factory) -> Path:
    wav = tmp_path_factory.mktemp('audio')/'silence.wav'
    _run('sox', '-n', '-r', '16000', '-c', '1', '-b', '16', wav, 'trim', '0', '3')
    return wav

@pytest.fixture(scope='session')
def server(tmp_path_factory) -> str:
    """`voicerag-demo` on a free loopback port (the default index built first if missing); stopped like a terminal's
    Ctrl-C."""
    from voicerag.core import free_port
    from voicerag.serving.assembly import ensure_index
    from voicerag.core import Config
    ensure_index(Config.load())                # ~90 s on a fresh checkout, before any timeout below starts
    port, log = free_port(), tmp_path_factory.mktemp('voila')/'voila.log'
    with open(log, 'w') as out:
        process = subprocess.Popen([str(Path(sys.executable).parent/'voicerag-demo'), '--port', str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f'http://127.0.0.1:{port}/'
    try:
        deadline = time.monotonic() + 120
        while f'voicerag demo: {url}' not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f'voicerag-demo did not come up (exit status {process.poll()}):\n{log.read_text()[-3000:]}')
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try: process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

def _browser(playwright, microphone:Path):
    "Chromium whose microphone plays `microphone` once (no loop), with the permission prompt accepted."
    if not CHROMIUM.exists(): pytest.fail(f'{CHROMIUM} is missing: Debian chromium (`make sysdeps` installs it)')
    return playwright.chromium.launch(executable_path=str(CHROMIUM), timeout=60_000, args=[
        '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
        f'--use-file-for-fake-audio-capture={microphone}%noloop', '--no-sandbox'])

@pytest.fixture(scope='session')
def browser(playwright, spoken_question):
    browser = _browser(playwright, spoken_question)
    yield browser
    browser.close()

def _open(browser, url:str):
    "A page of the app, loaded and ready, and the `Watch` that has seen it from the first request on."
    page = browser.new_page(viewport={'width': 1000, 'height': 1100})
    watch = Watch(page)
    page.set_default_timeout(ANSWER_MS)
    page.goto(url, timeout=PAGE_READY_MS)
    page.wait_for_selector('.vr-app .vr-record', timeout=PAGE_READY_MS)
    assert any(urlsplit(u).hostname in LOOPBACK for u in watch.urls), 'the watch saw none of the page\'s requests'
    return page, watch

def _stayed_local(watch:Watch):
    assert not (found := watch.problems()), 'the page went beyond this machine or logged errors:\n' + '\n'.join(found)

@pytest.fixture
def page(browser, server, request):
    page, watch = _open(browser, server)
    yield page
    _screenshot(page, request.node.name)
    page.close()
    _stayed_local(watch)

def _screenshot(page, name:str):
    folder = os.environ.get('VOICERAG_SCREENSHOTS')
    if folder: page.screenshot(path=str(Path(folder)/f'{name}.png'), full_page=True)

def _wait_for_result(page, previous:str=''):
    "Wait until the app shows a result other than `previous`."
    page.wait_for_function('prev => { const el = document.querySelector(".vr-result .vr-state"); '
                           'return el && el.closest(".vr-result").innerText !== prev; }', arg=previous)
    return page.inner_text('.vr-result')

def _record(page, seconds:float):
    "Record for `seconds`, then press stop unless the app has stopped by itself (the hands-free stop after a pause)."
    page.click('.vr-record')
    page.wait_for_selector('.vr-record:has-text("Stop")')
    page.wait_for_timeout(int(seconds * 1000))
    if 'Stop' in page.inner_text('.vr-record'): page.click('.vr-record')

def _shows_answer(page, answer:str, context:str, cited:str):
    """A short answer: `answer` large, its sentence holding `context` with the answer marked, the passage `cited` with
    the same mark."""
    from playwright.sync_api import expect
    expect(page.locator('.vr-state')).to_have_text('answered')
    expect(page.locator('.vr-answer-short')).to_contain_text(answer)
    expect(page.locator('.vr-context')).to_contain_text(context)               # the sentence around the answer
    expect(page.locator('.vr-context mark')).to_contain_text(answer)           # with the answer marked in it
    expect(page.locator('.vr-citation mark')).to_contain_text(answer)          # the quoted span, marked in its passage
    expect(page.locator('.vr-citation .vr-passage-context')).to_contain_text(context)
    expect(page.locator('.vr-cite-head')).to_contain_text(cited)
    short, sentence, marked = (page.inner_text(s).strip()
                               for s in ('.vr-answer-short', '.vr-context', '.vr-context mark'))
    # the mark is the answer; the answer is short
    assert marked == short and len(short) < len(sentence), (short, sentence)


def test_typed_questions(page):
    page.fill('.vr-question input', QUESTION)
    page.click('.vr-ask')
    first = _wait_for_result(page)
    _shows_answer(page, ANSWER, CONTEXT, CITED)
    latency = page.inner_text('.vr-latency')
    assert 'answer path' in latency and 'speech to text' not in latency, latency

    page.fill('.vr-question input', HINDI_QUESTION)
    page.click('.vr-ask')
    _wait_for_result(page, first)
    _shows_answer(page, ANSWER, HINDI_CONTEXT, CITED.replace('@en', '@hi'))

def test_spoken_question(page, spoken_question, pipeline):
    """Hands-free: press record and say nothing more; the transcript appears while speaking, the recorder stops after
    the pause, the answer follows."""
    page.click('.vr-record')
    page.wait_for_selector('.vr-partial:has-text("heard so far")',
                           timeout=int(_seconds(spoken_question) * 1000) + 10_000)
    _wait_for_result(page)
    assert 'Record' in page.inner_text('.vr-record')                          # stopped by itself, no click
    heard = page.inner_text('.vr-heard').split(':', 1)[1].strip()
    # heard once: no loop over the padding (`_unrepeated`)
    assert heard.lower().count('points') == 1, heard
    if 'panther' in heard.lower(): _shows_answer(page, ANSWER, CONTEXT, CITED)    # heard right: the right answer, cited
    else:
        # a streamed decode sometimes mishears espeak's "Panthers" ("punches"): the page must show what the pipeline
        # makes of it
        from playwright.sync_api import expect
        expect(page.locator('.vr-state')).to_have_text(pipeline.ask(heard).state.value)
    latency = page.inner_text('.vr-latency')
    # stt drawn apart from the answer path
    assert latency.index('speech to text') < latency.index('answer path'), latency

def test_undecodable_upload(page):
    with page.expect_file_chooser() as chooser: page.click('.vr-upload')
    chooser.value.set_files(files=[{'name': 'question.wav', 'mimeType': 'audio/wav',
                                    'buffer': b'RIFF\x00\x00\x00\x00WAVE, not audio'}])
    _wait_for_result(page)
    from playwright.sync_api import expect
    expect(page.locator('.vr-state')).to_have_text('stt_failed')
    expect(page.locator('.vr-message')).to_contain_text('I could not understand the audio')
    assert page.inner_text('.vr-citation') == ''

def test_silent_microphone(playwright, silence, server, request):
    browser = _browser(playwright, silence)
    try:
        page, watch = _open(browser, server)
        _record(page, 2.0)
        _wait_for_result(page)
        from playwright.sync_api import expect
        expect(page.locator('.vr-state')).to_have_text('stt_failed')
        expect(page.locator('.vr-message')).to_contain_text('silent')
        _screenshot(page, request.node.name)
        _stayed_local(watch)
    finally: browser.close()

def test_icons_come_from_this_machine(page):
    """The upload button's icon is drawn in Font Awesome that Voila serves from here (the page's watch sees no other
    host)."""
    glyph = page.evaluate("""() => getComputedStyle(document.querySelector('.vr-upload i.fa'), '::before').content""")
    assert glyph not in ('', 'none', 'normal'), glyph
    page.wait_for_function("""() => [...document.fonts].some(f => f.family.replaceAll('"', '') === 'Font Awesome 5 Free'
                                                                   && f.status === 'loaded')""")

UNBROKEN = '0123456789abcdef' * 40       # 640 characters without a break: a hash, a URL, a table flattened by an ingest

def test_long_unbroken_text_wraps(page):
    """An answer and its passage holding a 640-character unbroken run wrap inside their boxes instead of running past
    them."""
    from voicerag.serving.app import answer_html, citation_html
    from voicerag.core import Citation, Passage, Result, State
    text = f'The key is {UNBROKEN} and nothing else.'
    start = text.index(UNBROKEN)
    passage = Passage('own/0@en', text, 'en', 'own/0')
    result = Result(State.answered, UNBROKEN, 'ok', [Citation(passage.id, start, start + len(UNBROKEN))], True, 'en',
                    context=text, context_citation=Citation(passage.id, 0, len(text)))
    page.evaluate("""([answer, citation]) => {       // drawn as the widgets draw a result: their HTML set inside them
        document.querySelector('.vr-result .widget-html-content').innerHTML = answer;
        document.querySelector('.vr-citation .widget-html-content').innerHTML = citation; }""",
                  [answer_html(result), citation_html(result, {passage.id: passage})])
    boxes = ['.vr-answer-short', '.vr-context', '.vr-passage', '.vr-result', '.vr-citation', '.vr-app']
    for box in boxes[:3]: assert UNBROKEN in page.inner_text(box).replace('\n', ''), box
    widths = page.evaluate('boxes => boxes.map(b => [b, document.querySelector(b).scrollWidth, '
                           'document.querySelector(b).clientWidth])', boxes)
    assert all(scroll <= client for _, scroll, client in widths), f'(box, scrollWidth, clientWidth): {widths}'
    page_fits = 'document.documentElement.scrollWidth <= document.documentElement.clientWidth'
    assert page.evaluate(page_fits), 'the page scrolls sideways'
