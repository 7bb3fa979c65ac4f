"""Test-wide settings: hypothesis runs derandomized, so a CI run replays exactly what passed here."""
from hypothesis import settings

settings.register_profile("advbounds", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("advbounds")
