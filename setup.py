"Package metadata read from settings.ini (the nbdev convention), without pkg_resources."
from configparser import ConfigParser
import setuptools

assert setuptools.__version__ >= '36.2', 'setuptools is too old'

config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']

expected = ('version description keywords author author_email license '
            'status min_python audience language lib_name').split()
missing = [o for o in expected if o not in cfg]
if missing: raise SystemExit(f'settings.ini is missing: {missing}')

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature',
            '7 - Inactive']
lic = licenses[cfg['license']]

def split_reqs(key): return cfg.get(key, '').split()

setuptools.setup(
    name=cfg['lib_name'],
    license=lic[0],
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title(),
                 'License :: ' + lic[1],
                 'Programming Language :: Python :: ' + cfg['min_python']],
    url=cfg['git_url'],
    # the wheel carries what an installed voicerag reads and a checkout keeps beside the package (voicerag.paths):
    # data/ as voicerag._data and the demo notebook as voicerag._demo; the models live in the package already
    packages=(setuptools.find_packages(include=[cfg['lib_path'], cfg['lib_path'] + '.*'])
              + [f"{cfg['lib_path']}._data", f"{cfg['lib_path']}._demo"]),
    package_dir={f"{cfg['lib_path']}._data": 'data', f"{cfg['lib_path']}._demo": cfg['nbs_path']},
    package_data={cfg['lib_path']: ['models/*.npz', 'models/*.json',     # reader, answerability, re-ranker, abstainer
                                  'messages.json',                     # what the asker reads, per language (00b)
                                  'jupyter/voila/templates/*/*'],      # the app's Voila template (91_app)
                  f"{cfg['lib_path']}._data": ['*.gz', '*.jsonl', '*.txt', '*.md'],
                  f"{cfg['lib_path']}._demo": ['90_demo.ipynb']},
    install_requires=split_reqs('requirements'),
    # scale: voicerag-build --engine ray
    extras_require={'dev': split_reqs('dev_requirements'), 'scale': split_reqs('scale_requirements')},
    python_requires='>=' + cfg['min_python'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={'console_scripts': split_reqs('console_scripts'),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    version=cfg['version'],
    description=cfg['description'],
    keywords=cfg['keywords'],
    author=cfg['author'],
    author_email=cfg['author_email'],
)
