"""The browser UI: a prebuilt static bundle (built from `frontend/` by `scripts/build-web`)."""
