"""The layer picture in nbs/architecture.md (the docs' architecture page) matches the imports. Its rows name the
package's folders (`retrieval`) and top-level modules (`pipeline`), bottom layer first; every import inside the package
goes to the same or a lower layer, there are no cycles between modules, and every folder and module is listed once."""
import ast, re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT/'voicerag'

LAYERS_PAGE = ROOT/'nbs'/'architecture.md'                    # the docs' architecture page

def layer_table() -> list[list[str]]:
    "The folders and modules of each row of the `| layer | packages and modules |` table in LAYERS_PAGE, bottom first."
    lines = LAYERS_PAGE.read_text(encoding='utf-8').splitlines()
    header = re.compile(r'\|\s*layer\s*\|\s*packages and modules\s*\|')
    start = next(i for i, line in enumerate(lines) if header.fullmatch(line.strip()))
    rows = []
    for line in lines[start + 2:]:                            # past the header and its |---|---| line
        if not line.startswith('|'): break
        rows.append(re.findall(r'`(\w+)`', line.strip().strip('|').split('|')[1]))
    return rows

def modules() -> set[str]:
    "Every module of the package by its dotted name under `voicerag` (`retrieval.bm25`), private ones left out."
    return {'.'.join(p.relative_to(PKG).with_suffix('').parts) for p in PKG.rglob('*.py')
            if not any(part.startswith('_') for part in p.relative_to(PKG).parts)}

def unit(module:str) -> str: return module.split('.')[0]        # its folder, or the module itself at the top level

def imports_of(name:str) -> set[str]:
    "The package modules `name` imports: module-level and inside functions, relative or absolute."
    here, found = name.split('.')[:-1], set()
    def target(base:list[str], node) -> set[str]:
        full = '.'.join(base + ((node.module or '').split('.') if node.module else []))
        return {full} | {f'{full}.{a.name}'.lstrip('.') for a in node.names}     # `from .x import y`: y may be a module
    for node in ast.walk(ast.parse((PKG/(name.replace('.', '/') + '.py')).read_text(encoding='utf-8'))):
        if isinstance(node, ast.ImportFrom):
            if node.level: found |= target(here[:len(here) - node.level + 1], node)
            elif (node.module or '').split('.')[0] == 'voicerag':
                found |= target([], node) | {node.module[len('voicerag.'):]}
        elif isinstance(node, ast.Import):
            found |= {a.name[len('voicerag.'):] for a in node.names if a.name.startswith('voicerag.')}
    return (found & modules()) - {name}

def layer_of() -> dict[str, int]: return {u: i for i, row in enumerate(layer_table()) for u in row}

def test_every_folder_and_module_in_exactly_one_layer():
    listed = [u for row in layer_table() for u in row]
    units = {unit(m) for m in modules()}
    assert len(layer_table()) >= 2 and len(listed) == len(set(listed)), f'listed twice: {listed}'
    assert set(listed) == units, (f'not listed: {sorted(units - set(listed))}; '
                                  f'listed but absent: {sorted(set(listed) - units)}')

def test_the_walker_sees_function_level_and_relative_imports():
    assert 'serving.assembly' in imports_of('serving.app') and 'paths' in imports_of('fitting.declining')
    assert 'corpus.data' in imports_of('retrieval.index') and 'core' in imports_of('retrieval.bm25')

def test_imports_go_to_the_same_or_a_lower_layer():
    layer = layer_of()
    upward = [f'{m} (layer {layer[unit(m)] + 1}) imports {t} (layer {layer[unit(t)] + 1})'
              for m in sorted(modules()) for t in sorted(imports_of(m)) if layer[unit(t)] > layer[unit(m)]]
    assert not upward, 'imports against the layers of nbs/architecture.md:\n' + '\n'.join(upward)

def test_no_import_cycles():
    graph = {m: imports_of(m) for m in modules()}
    state, cycles = {}, []
    def visit(m, path):
        state[m] = 'open'
        for t in sorted(graph[m]):
            if state.get(t) == 'open': cycles.append(' -> '.join(path[path.index(t):] + [t]))
            elif t not in state: visit(t, path + [t])
        state[m] = 'done'
    for m in sorted(graph):
        if m not in state: visit(m, [m])
    assert not cycles, 'import cycles:\n' + '\n'.join(cycles)
