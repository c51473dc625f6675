"""The docs site (`make docs`) built into a temporary folder and opened in Chromium.

The build must pass with warnings as errors (a broken cross-reference fails it). Every page must load its scripts,
styles and fonts from the site itself, never a CDN; the home page and one module's page (`retrieval/04_bm25`) are
opened from file:// in Chromium, where every request must stay on this machine, the console must stay free of errors,
and every link into the site must reach a file that exists (and an anchor in it, when the link names one). Every
notebook must be a page, linked from the navigation, and the search must work offline. Set
VOICERAG_SCREENSHOTS=<folder> to keep a screenshot of each page opened.
"""
import functools, importlib, os, re, shutil, subprocess, sys
from pathlib import Path
from urllib.parse import unquote, urlsplit
import pytest
from pagewatch import Watch, leaves_machine

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHROMIUM = Path('/usr/bin/chromium')
PAGES = ['index.html', 'retrieval/04_bm25.html']          # the home page and one module's API page
MODULE_FOLDERS = ('corpus', 'retrieval', 'answering', 'voice', 'serving', 'fitting')
# what a browser fetches as it renders a page (an <a>'s href it does not)
LOADED = {'script': 'src', 'img': 'src', 'iframe': 'src', 'source': 'src', 'audio': 'src', 'video': 'src',
          'embed': 'src', 'link': 'href'}
STYLE_URL = re.compile(r'''(?:url\(\s*['"]?|@import\s+['"])((?:https?:)?//[^'")\s]+)''')

def _require(module:str, hint:str):
    try: return importlib.import_module(module)
    except ImportError: pytest.fail(f'{module} is not installed: {hint}')

@pytest.fixture(scope='module')
def site(tmp_path_factory) -> Path:
    "The site, built by the Makefile's own `docs` recipe into a temporary folder (the venv taken as installed)."
    for module in ('sphinx', 'myst_nb', 'sphinx_book_theme', 'bs4'):
        _require(module, 'it is a dev dependency in settings.ini (`make install` installs it)')
    if shutil.which('make') is None: pytest.fail('make is not installed (Debian: apt-get install make)')
    out = tmp_path_factory.mktemp('docs')/'site'
    built = subprocess.run(['make', '--no-print-directory', '-o', 'install', 'docs', f'DOCS={out}', f'BIN={BIN}'],
                           cwd=ROOT, capture_output=True, text=True, timeout=900)
    log = f'{built.stdout[-3000:]}\n{built.stderr[-5000:]}'
    assert built.returncode == 0, f'make docs failed (a warning fails it):\n{log}'
    assert (out/'index.html').exists(), built.stdout
    beside = [p.name for p in out.parent.iterdir() if p != out]
    assert not beside, f"the build wrote beside the site (myst-nb's jupyter_execute?): {beside}"
    return out

def remote_loads(html:str) -> list[str]:
    "What a page would fetch from another host: scripts, styles, fonts, images, frames, media."
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(html, 'html.parser')
    found = [f'<{tag} {attr}="{el[attr]}">' for tag, attr in LOADED.items()
             for el in soup.find_all(tag) if el.get(attr) and leaves_machine(el[attr])]
    return found + [f'url({m.group(1)}) in a style' for m in STYLE_URL.finditer(html)]

def test_remote_loads_are_found():
    html = ('<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//fonts.example/f.css">'
            '<style>@font-face { src: url("https://fonts.example/a.woff2") }</style>'
            '<a href="https://nbdev.fast.ai">a link, not a load</a>'
            '<script src="_static/local.js"></script><img src="data:image/png;base64,AA==">'
            '<link href="http://127.0.0.1:8000/x.css">')
    assert remote_loads(html) == ['<script src="https://cdn.example/x.js">', '<link href="//fonts.example/f.css">',
                                  'url(https://fonts.example/a.woff2) in a style']

def test_no_page_or_style_loads_from_another_host(site):
    pages = sorted(site.rglob('*.html'))
    assert len(pages) > 10, pages
    found = {p.relative_to(site).as_posix(): r for p in pages if (r := remote_loads(p.read_text(encoding='utf-8')))}
    styles = {p.relative_to(site).as_posix(): r for p in site.rglob('*.css')
              if (r := STYLE_URL.findall(p.read_text(encoding='utf-8')))}
    assert not found and not styles, f'loaded from another host: {found} {styles}'
    home = (site/'index.html').read_text(encoding='utf-8').lower()
    assert not list(site.rglob('*mathjax*')) and 'mathjax' not in home and 'require.js' not in home

def _notebooks() -> list[str]:
    "Every notebook under nbs/ as its page's path in the site (nbdev's rule: `_` and `.` names are not notebooks)."
    nbs = ROOT/'nbs'
    return sorted(p.relative_to(nbs).with_suffix('.html').as_posix() for p in nbs.rglob('*.ipynb')
                  if not any(part.startswith(('_', '.')) for part in p.relative_to(nbs).parts))

def test_every_notebook_is_a_page_in_the_navigation(site):
    from bs4 import BeautifulSoup
    nav = BeautifulSoup((site/'index.html').read_text(encoding='utf-8'), 'html.parser').select_one('nav.bd-docs-nav')
    assert nav is not None, 'the home page has no navigation sidebar'
    linked = {unquote(urlsplit(a['href']).path) for a in nav.find_all('a', href=True)}
    missing = [page for page in _notebooks() if page != 'index.html' and page not in linked]
    assert not missing, f'notebooks not in the navigation: {missing}'
    assert all((site/page).exists() for page in _notebooks())
    captions = [c.get_text(strip=True) for c in nav.select('p.caption')]
    assert captions[0] == 'Guide' and {f'Modules: {f}/' for f in MODULE_FOLDERS} <= set(captions), captions

def test_readme_links_reach_the_page_sources():
    "The README links into the docs as the pages' sources in the repository (which read on GitHub): each must exist."
    links = re.findall(r'\]\(([^)\s]+)\)', (ROOT/'README.md').read_text(encoding='utf-8'))
    relative = [unquote(urlsplit(link).path) for link in links
                if not urlsplit(link).scheme and not link.startswith(('#', '//'))]
    assert any(link.startswith('nbs/') for link in relative), f'the README links to no docs page: {links}'
    missing = [link for link in relative if not (ROOT/link).is_file()]
    assert not missing, f'README links to missing files: {missing}'

@pytest.fixture(scope='module')
def browser(playwright):
    "Chromium from the session's Playwright (`conftest.py`)."
    if not CHROMIUM.exists(): pytest.fail(f'{CHROMIUM} is missing: Debian chromium (`make sysdeps` installs it)')
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), timeout=60_000, args=['--no-sandbox'])
    yield browser
    browser.close()

@functools.cache
def _ids(html_file:Path) -> frozenset[str]:
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(html_file.read_text(encoding='utf-8'), 'html.parser')
    return frozenset(el['id'] for el in soup.find_all(id=True))

def _screenshot(page, name:str):
    if folder := os.environ.get('VOICERAG_SCREENSHOTS'):
        page.screenshot(path=str(Path(folder)/f'docs_{name.replace("/", "_")}.png'), full_page=True)

@pytest.mark.parametrize('name', PAGES)
def test_page_in_chromium_is_local_and_its_links_resolve(site, browser, name):
    page = browser.new_page(viewport={'width': 1200, 'height': 1000})
    watch = Watch(page)
    page.goto((site/name).as_uri(), wait_until='load', timeout=60_000)
    page.wait_for_timeout(500)                               # let deferred scripts run and report
    hrefs = page.eval_on_selector_all('a[href]', 'els => els.map(e => e.href)')
    _screenshot(page, name)
    page.close()
    assert any(u.startswith('file://') for u in watch.urls[1:]), "the watch saw none of the page's own requests"
    assert not (found := watch.problems()), f'{name} went beyond this machine or logged errors:\n' + '\n'.join(found)
    internal = [u for u in hrefs if urlsplit(u).scheme == 'file']
    assert len(internal) > 20, internal                     # the navigation alone links every page
    broken = []
    for url in internal:
        parts = urlsplit(url)
        target = Path(unquote(parts.path))
        if not target.is_file(): broken.append(f'{url}: no such file'); continue
        if not target.resolve().is_relative_to(site.resolve()): broken.append(f'{url}: outside the site')
        if parts.fragment and target.suffix == '.html' and unquote(parts.fragment) not in _ids(target):
            broken.append(f'{url}: no anchor #{parts.fragment}')
    assert not broken, f'{name} links to what is not there:\n' + '\n'.join(broken)

def test_search_works_from_file(site, browser):
    "The search page finds a notebook by a word of its text, offline: the index is a local script, nothing is fetched."
    page = browser.new_page()
    watch = Watch(page)
    page.goto((site/'search.html').as_uri() + '?q=ranking', wait_until='load', timeout=60_000)
    done = '() => /found \\d+ page/.test(document.querySelector("#search-results")?.innerText || "")'
    page.wait_for_function(done, timeout=30_000)
    found = page.inner_text('#search-results')
    page.close()
    assert 'bm25' in found, found
    assert not (problems := watch.problems()), 'the search page went beyond this machine or logged errors:\n' + \
        '\n'.join(problems)
