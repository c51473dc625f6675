"The layer picture in nbs/index.ipynb (and so the README) matches the imports: every import inside the package goes to the same or a lower layer, no cycles, every module listed."
import ast, json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT/'voicerag'

def layer_table() -> list[list[str]]:
    "The modules of each row of the `| layer | modules |` table in nbs/index.ipynb, bottom layer first."
    nb = json.loads((ROOT/'nbs'/'index.ipynb').read_text(encoding='utf-8'))
    lines = '\n'.join(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'markdown').splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r'\|\s*layer\s*\|\s*modules\s*\|', line.strip()))
    rows = []
    for line in lines[start + 2:]:                            # past the header and its |---|---| line
        if not line.startswith('|'): break
        rows.append(re.findall(r'`(\w+)`', line.strip().strip('|').split('|')[1]))
    return rows

def modules() -> set[str]: return {p.stem for p in PKG.glob('*.py') if not p.stem.startswith('_')}

def imports_of(name:str) -> set[str]:
    "The package modules `name` imports: module-level and inside functions, relative or absolute."
    found = set()
    for node in ast.walk(ast.parse((PKG/f'{name}.py').read_text(encoding='utf-8'))):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or '').split('.') if node.module else []
            if node.level == 1: found |= {parts[0]} if parts else {a.name for a in node.names}
            elif node.level == 0 and parts and parts[0] == 'voicerag':
                found |= {parts[1]} if len(parts) > 1 else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split('.')[1] for a in node.names if a.name.startswith('voicerag.')}
    return (found & modules()) - {name}

def layer_of() -> dict[str, int]: return {m: i for i, row in enumerate(layer_table()) for m in row}

def test_every_module_in_exactly_one_layer():
    listed = [m for row in layer_table() for m in row]
    assert len(layer_table()) >= 2 and len(listed) == len(set(listed)), f'a module is listed twice: {listed}'
    assert set(listed) == modules(), f'not listed: {sorted(modules() - set(listed))}; listed but absent: {sorted(set(listed) - modules())}'

def test_the_walker_sees_function_level_imports():
    assert 'serving' in imports_of('app') and 'metrics' in imports_of('answerability')   # both imported inside functions

def test_imports_go_to_the_same_or_a_lower_layer():
    layer = layer_of()
    upward = [f'{m} (layer {layer[m] + 1}) imports {t} (layer {layer[t] + 1})'
              for m in sorted(modules()) for t in sorted(imports_of(m)) if layer[t] > layer[m]]
    assert not upward, 'imports against the layers of nbs/index.ipynb:\n' + '\n'.join(upward)

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
