#!/bin/sh
# The image serves the studio on 0.0.0.0, so it refuses to start without an access token.
set -e
if [ -z "${FLOWKIT_STUDIO_TOKEN:-}" ]; then
  echo "flowkit: set FLOWKIT_STUDIO_TOKEN (docker run -e FLOWKIT_STUDIO_TOKEN=...) to serve the studio on 0.0.0.0," >&2
  echo "or put it behind a reverse proxy that authenticates and set the token anyway." >&2
  exit 64
fi
flowkit setup
# studio/serve.py: app.py behind the server-side guard (login form, cookie, throttled guesses)
exec streamlit run studio/serve.py --server.address 0.0.0.0 --server.port 8501 --server.headless true
