"""One module per resource; `upstream.api.app` includes each module's `router`."""
