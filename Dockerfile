# flowkit studio. CPU by default; for GPU offload build with
#   --build-arg BASE=nvidia/cuda:12.4.1-devel-ubuntu22.04 --build-arg LLAMA_CMAKE_ARGS="-DGGML_CUDA=on"
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG LLAMA_CMAKE_ARGS=""
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    ANONYMIZED_TELEMETRY=False FLOWKIT_HOME=/data \
    FLOWKIT_CACHE_KEY_FILE=/data/keys/cache.key
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake git \
      python3 python3-pip python3-venv nodejs npm && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY flowkit ./flowkit
COPY storage ./storage
COPY service ./service
COPY studio ./studio
# logo, page icon, module colours, CSS (studio/common/assets.py); pyproject ships them in a wheel too
COPY assets ./assets
# the editor's canvas (a React Flow component): built here, its node_modules dropped after
RUN cd studio/canvas_ui/frontend && npm ci --no-audit --no-fund && npm run build && rm -rf node_modules
RUN python3 -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && CMAKE_ARGS="${LLAMA_CMAKE_ARGS}" python3 -m pip install -e . \
 && python3 -m flowkit.runtime.models
COPY app.py ./
COPY .streamlit ./.streamlit
COPY pages ./pages
VOLUME /data
EXPOSE 8501
COPY docker-entrypoint.sh ./
# binds 0.0.0.0, so it refuses to start unless FLOWKIT_STUDIO_TOKEN is set (studio/guard.py checks it)
CMD ["sh", "./docker-entrypoint.sh"]
