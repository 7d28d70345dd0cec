"""Packaging for rlds_lite."""

import pathlib
import re

import setuptools

HERE = pathlib.Path(__file__).parent
VERSION = re.search(r"__version__ = '([^']+)'",
                    (HERE / 'rlds_lite' / '__init__.py').read_text()).group(1)

setuptools.setup(
    name='rlds_lite',
    version=VERSION,
    description='Fast, dependable RLDS episodic RL data on tf.data; a drop-in for RLDS.',
    long_description=(HERE / 'README.md').read_text(),
    long_description_content_type='text/markdown',
    packages=setuptools.find_packages(include=['rlds_lite', 'rlds_lite.*']),
    # The viewer's page templates, script and style sheet.
    package_data={'rlds_lite.view': ['templates/*.html', 'static/*'],
                  'rlds_lite.record': ['static/*']},
    python_requires='>=3.10',
    install_requires=[
        'tensorflow>=2.21,<2.22',
        'tensorflow-datasets>=4.9.10,<4.10',
        'importlib_resources',  # TFDS 4.9.10 imports it without declaring it.
        'dm-env>=1.6',
        'numpy>=2,<3',
        'tqdm>=4.60',
        'matplotlib>=3.8',  # The demo's plots.
        'envlogger==1.2',  # 1.3 wheels need glibc >= 2.38; see rlds_lite/envlogger/compat.py.
        'h5py>=3.10',  # Minari, D4RL and TorchRL TED files (rlds_lite.convert).
        # Random access checks each record's TFRecord checksum (CRC32C) at
        # its first read: hardware CRC32C, an 80 KB wheel without dependencies.
        'google-crc32c>=1.5',
    ],
    extras_require={
        'test': [
            'pytest>=8',
            # make test runs the suite on two workers, a test file each.
            'pytest-xdist>=3.5',
            # A test that hangs fails alone, with every thread's stack, instead
            # of holding CI until its time limit (pytest.ini sets the limit).
            'pytest-timeout>=2.3',
            'hypothesis>=6.100',
            # The Beam build and `tfds build` tests need these (see the beam extra).
            'apache-beam>=2.77,<3',
            'mlcroissant',
            # JAX feeding, the colabs, and Minari compatibility are tested too.
            'jax>=0.4.30',
            'nbclient>=0.10',
            'nbformat>=5.10',
            'ipykernel>=6.29',
            'minari==0.5.4',
            # rlds_lite.record (the gymnasium extra) is tested against
            # minari.DataCollector (writing needs jax, above).
            'gymnasium>=1.1,<2',
            'Pillow>=10',
            # MP4 output of episode_to_video (the video extra) is tested too.
            'imageio>=2.30',
            'imageio-ffmpeg>=0.5',
            # colabs/performance.ipynb compares with upstream (needs absl-py, numpy).
            'rlds==0.1.8',
            # rlds-lite view (the view extra), tested in a real headless browser:
            # Playwright drives Debian's chromium (the Makefile installs it).
            'Flask>=3.1',
            'plotly>=5',
            'playwright>=1.40',
            # rlds_lite.convert.lerobot (the lerobot extra) is tested too; PyAV
            # also encodes the viewer's videos.
            'pyarrow>=15',
            'av>=15',
            # rlds_lite.random_access's Grain readers are tested too.
            'grain>=0.2,<0.3',
        ],
        'jax': ['jax>=0.4.30'],
        # rlds_lite.record: Gymnasium envs and vector envs recorded as RLDS.
        'gymnasium': ['gymnasium>=1.1,<2'],
        # rlds-lite record: people play an env in the browser (Flask, PNG frames).
        'record': ['gymnasium>=1.1,<2', 'Flask>=3.1', 'Pillow>=10', 'PyYAML>=6'],
        # rlds_lite.random_access.grain_batches / GrainSamples (JAX users).
        'grain': ['grain>=0.2,<0.3'],
        # MP4 output of rlds_lite.episode_to_video (GIF needs nothing).
        'video': ['imageio>=2.30', 'imageio-ffmpeg>=0.5'],
        # rlds-lite view: the web app (Flask), camera videos (PyAV encodes
        # H.264 in-process), plots (plotly.min.js ships inside plotly).
        'view': ['Flask>=3.1', 'av>=15', 'plotly>=5'],
        'bench': ['rlds==0.1.8', 'absl-py', 'psutil'],
        # LeRobot datasets (rlds_lite.convert.lerobot): Parquet and MP4 video.
        'lerobot': ['pyarrow>=15', 'av>=15'],
        # TFDS's own beam extra pins apache-beam < 2.65, which clashes with TF 2.21.
        'beam': ['apache-beam>=2.77,<3', 'mlcroissant'],
    },
    entry_points={'console_scripts': ['rlds-lite=rlds_lite.cli:main']},
    classifiers=[
        'Programming Language :: Python :: 3',
        'License :: OSI Approved :: Apache Software License',
        'Topic :: Scientific/Engineering :: Artificial Intelligence',
    ],
)
