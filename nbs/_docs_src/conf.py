"""Sphinx configuration of the voicerag docs site. `make docs` runs `sphinx-build -c nbs/_docs_src nbs _docs`:
the source folder is `nbs/` itself, so every notebook is a page, rendered from its saved outputs and never executed,
beside the hand-written pages (`nbs/*.md`). This folder starts with `_`, so nbdev skips it, and so does Sphinx.

The site loads nothing from another host: the theme's CSS, JS and fonts are copied into `_docs/_static`, no MathJax,
RequireJS, widget manager, Thebe, Binder or repository button (`tests/test_docs.py` opens it in Chromium and checks).

Two changes happen to the notebooks as Sphinx reads them (the files on disk stay as they are):
- nbdev's `#| ...` directive lines are dropped from the code shown; a `#| hide` or `#| default_exp` cell is left out.
- `index.ipynb` (the home page, also rendered to README.md) links to pages as `nbs/PAGE`, which reads from the
  repository's top level on GitHub; here those links lose the `nbs/`. The navigation is appended to it: the guide
  pages, then every notebook grouped by its folder, found on disk, so a new notebook appears without editing this file.
"""
import configparser, json, re
from pathlib import Path

NBS = Path(__file__).resolve().parents[1]
_settings = configparser.ConfigParser()
_settings.read(NBS.parent/'settings.ini', encoding='utf-8')
_ini = _settings['DEFAULT']

project = _ini.get('lib_name', 'voicerag')
author = _ini.get('author', '')
copyright = _ini.get('copyright', '')
release = version = _ini.get('version', '')

extensions = ['myst_nb']
root_doc = 'index'
# nbdev's rule: names starting with `_` or `.` are not notebooks (this folder, checkpoints)
exclude_patterns = ['_*', '**/_*', '.*', '**/.*', '**/.ipynb_checkpoints']

# the guide: hand-written pages and the results notebook, in the navigation's order
GUIDE = ['usage', 'architecture', 'results', 'limitations', 'own_corpus', 'http_api', 'reproducing']
# the package's folders, in the order of its layers; a folder not named here comes after them, alphabetically
FOLDERS = ['corpus', 'retrieval', 'answering', 'voice', 'serving', 'fitting', 'experiments']

nb_execution_mode = 'off'           # saved outputs only: `make test` runs the notebooks, the docs show what they saved
nb_ipywidgets_js = {}               # no RequireJS or widget manager from a CDN (saved outputs hold no widget views)
nb_merge_streams = True
nb_render_markdown_format = 'myst'  # Markdown outputs (the results) are GFM tables, which CommonMark does not parse
myst_heading_anchors = 3            # `page.md#a-section` links resolve
myst_enable_extensions = ['colon_fence']
suppress_warnings = ['myst.header']  # notebooks may go from `#` to `###`; that is not worth a warning

html_theme = 'sphinx_book_theme'
html_title = project
html_copy_source = False
html_show_sourcelink = False
html_show_search_summary = False   # a summary is fetched from each found page, which browsers refuse on file://
html_last_updated_fmt = None
html_theme_options = {
    'repository_url': '', 'use_repository_button': False, 'use_issues_button': False, 'use_edit_page_button': False,
    'use_download_button': False, 'use_fullscreen_button': False, 'use_sidenotes': False,
    'launch_buttons': {'binderhub_url': '', 'jupyterhub_url': '', 'colab_url': '', 'deepnote_url': '', 'thebe': False},
    'show_toc_level': 2, 'navigation_with_keys': False, 'show_navbar_depth': 1,
    'icon_links': [], 'analytics': {},
}
html_context = {'default_mode': 'auto'}   # light or dark as the reader's system says; unset, the theme logs an error
# no MathJax (it would come from a CDN): `_math_as_text` below writes TeX as text
html_math_renderer = 'voicerag_plain'

_DIRECTIVE = re.compile(r'^#\|\s*([\w-]+)')
_LEFT_OUT = {'hide', 'default_exp'}
# pages whose code only renders their tables, as in the README: the code sits behind a toggle
CODE_FOLDED = {'index', 'results'}

def _shown_cells(cells:list[dict], fold:bool=False) -> list[dict]:
    "The cells a reader sees: directives dropped, `hide` and `default_exp` cells left out; `fold`: code in a toggle."
    shown = []
    for cell in cells:
        if cell.get('cell_type') == 'code':
            lines = ''.join(cell.get('source', '')).splitlines(keepends=True)
            directives = {m.group(1) for line in lines if (m := _DIRECTIVE.match(line))}
            if directives & _LEFT_OUT: continue
            cell = dict(cell, source=''.join(line for line in lines if not _DIRECTIVE.match(line)).lstrip('\n'))
            if fold: cell['metadata'] = dict(cell.get('metadata', {}), tags=['hide-input'])
        shown.append(cell)
    return shown

def notebook_groups(nbs:Path=NBS) -> list[tuple[str, list[str]]]:
    "Every notebook but the guide's, by folder: (folder, docnames); the top level (`''`) first, then `FOLDERS`' order."
    found = {}
    for path in sorted(nbs.rglob('*.ipynb')):
        rel = path.relative_to(nbs)
        if any(part.startswith(('_', '.')) for part in rel.parts): continue
        doc = rel.with_suffix('').as_posix()
        if doc in GUIDE or doc == root_doc: continue
        found.setdefault('/'.join(rel.parts[:-1]), []).append(doc)
    order = [''] + FOLDERS
    return sorted(found.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))

def _toctree(caption:str, docs:list[str]) -> str:
    return '```{toctree}\n:caption: ' + caption + '\n:hidden:\n:maxdepth: 1\n\n' + '\n'.join(docs) + '\n```\n'

def navigation() -> str:
    "The site's navigation, as MyST toctrees: the guide, then the notebooks of each folder."
    trees = [_toctree('Guide', GUIDE)]
    for folder, docs in notebook_groups():
        kind = 'Measurements' if folder == 'experiments' else 'Modules'      # experiments export nothing
        trees.append(_toctree(f'{kind}: {folder}/' if folder else f'{kind}: top level', docs))
    return '\n'.join(trees)

def _read_notebook(app, docname:str, source:list[str]):
    if Path(app.env.doc2path(docname)).suffix != '.ipynb': return
    nb = json.loads(source[0])
    nb['cells'] = _shown_cells(nb['cells'], fold=docname in CODE_FOLDED)
    python = {'name': 'python3', 'display_name': 'python3', 'language': 'python'}      # some notebooks name no kernel
    nb.setdefault('metadata', {}).setdefault('kernelspec', python)
    if docname == root_doc:
        for cell in nb['cells']:
            if cell.get('cell_type') == 'markdown':
                cell['source'] = re.sub(r'\]\(nbs/', '](', ''.join(cell['source']))
        nb['cells'].append({'cell_type': 'markdown', 'id': 'docs-nav', 'metadata': {}, 'source': navigation()})
    source[0] = json.dumps(nb, ensure_ascii=False)

def _math_as_text(self, node):
    from docutils import nodes
    text = self.encode(node.astext())
    tag = 'div' if isinstance(node, nodes.math_block) else 'span'
    self.body.append(f'<{tag} class="math notranslate">{text}</{tag}>')
    raise nodes.SkipNode

def _outputs_beside_doctrees(app):
    "myst-nb writes images to `jupyter_execute/` beside the site (the repository's top level for `_docs`): move it."
    folder = Path(app.doctreedir).resolve()/'jupyter_execute'                  # inside the site's .doctrees
    app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(folder))

def setup(app):
    app.connect('source-read', _read_notebook)
    app.connect('builder-inited', _outputs_beside_doctrees, priority=900)     # after myst-nb's own handler (500)
    app.add_html_math_renderer('voicerag_plain', (_math_as_text, None), (_math_as_text, None))
