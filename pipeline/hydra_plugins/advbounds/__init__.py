"""The project's Hydra plugins: the points sweeper (hydra/sweeper=points) and the SLURM launcher (hydra/launcher=slurm*).

The source lives in pipeline/hydra_plugins/, and the packaging (pyproject.toml, [tool.setuptools.packages.find])
installs it as `hydra_plugins.advbounds`, a portion of the `hydra_plugins` namespace package that Hydra's plugin
scan imports: Hydra finds the plugin classes and their configs itself, in every process that composes a config
(`python -m pipeline`, `compose()` in the tests, a submitit/SLURM job). The modules are thin: the sweep's and the
cluster's logic is in pipeline.sweeper and pipeline.slurm_launcher.
"""
# Imported as pipeline.hydra_plugins.advbounds, each class would exist twice (Hydra knows the hydra_plugins one).
if __name__ != "hydra_plugins.advbounds":
    raise ImportError(f"import hydra_plugins.advbounds, not {__name__} (pipeline/hydra_plugins/ is installed as the "
                      f"hydra_plugins namespace package: pip install -e .)")
