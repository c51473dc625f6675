"""`make refit` (and `make test-slow`, which starts with it) reruns every notebook that saves the shipped answerability
model, in the Makefile's order (`FITS`): the list must name notebooks that exist, and every notebook that saves the
model (a code cell calling `.save()` with no path, which writes `voicerag/models/answerability.json`) must be in it."""
import json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def fits() -> list[str]:
    "The notebooks of the Makefile's `FITS`, in order, as paths under nbs/."
    text = ROOT.joinpath('Makefile').read_text(encoding='utf-8').replace('\\\n', ' ')
    line = next(line for line in text.splitlines() if line.startswith('FITS :='))
    return [f'{name}.ipynb' for name in line.split(':=', 1)[1].split()]

def code_of(path:Path) -> str:
    return '\n'.join(''.join(c['source']) for c in json.loads(path.read_text(encoding='utf-8'))['cells']
                     if c['cell_type'] == 'code')

def saves_answerability(path:Path) -> bool:
    code = code_of(path)
    return bool(re.search(r'\.save\(\)', code)) and 'answerability' in code.lower()

def test_fits_exist_and_come_first():
    names = fits()
    assert names[0] == 'experiments/13b_answerability_measured.ipynb'       # the one that fits the model anew
    for name in names: assert (ROOT/'nbs'/name).exists(), name

def test_every_notebook_saving_the_model_is_refitted():
    saving = {str(p.relative_to(ROOT/'nbs')) for p in (ROOT/'nbs').rglob('*.ipynb')
              if '.ipynb_checkpoints' not in p.parts and saves_answerability(p)}
    assert saving == set(fits())
