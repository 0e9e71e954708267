"""
The ``gpflow-ep`` console script: TensorFlow's start-up log lines ("failed call to cuInit" on a
machine without a GPU, oneDNN and CUDA notices) look like errors to a user, so they are hidden
while TensorFlow loads (``TF_CPP_MIN_LOG_LEVEL=3`` unless set, and stderr held back during the
import; shown in full if the import fails). TensorFlow is loaded only for a command that trains
(``compare``): ``--help`` and ``--version`` do not load it.
``python -m gpflow_ep`` runs the same commands without hiding the log.
"""

import os
import sys
import tempfile


def load_tensorflow_quietly() -> None:
    """Import TensorFlow and initialise its device with stderr held back (shown if the import fails)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            import tensorflow as tf

            tf.constant(0.0) + 0.0  # device initialisation logs here, not in the command's output
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def main() -> int:
    from gpflow_ep.cli import main as run

    return run(prepare=load_tensorflow_quietly)


if __name__ == "__main__":
    raise SystemExit(main())
