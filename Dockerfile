# The pipescale images, for a machine with a container engine:
#   docker build --target operator -t pipescale/operator:0.1.0 .
#   docker build --target model-server -t pipescale/model-server:dev .
#   docker build --target router -t pipescale/router:0.1.0 .
# Without one (no registry either), hack/build-image.sh makes the same images as an OCI layout
# from the same package lists (hack/packages/*.txt) with debootstrap and umoci.
ARG DEBIAN_RELEASE=bookworm

FROM debian:${DEBIAN_RELEASE} AS build
COPY hack/packages/build.txt /tmp/build.txt
RUN apt-get update \
 && sed 's/#.*//; /^[[:space:]]*$/d' /tmp/build.txt | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPESCALE_BUILD_BENCH=OFF \
 && cmake --build /build --target pipescale-operator pipescale-model-server pipescale-router

# Only the runtime libraries; nothing here needs the shell the base image happens to have.
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
COPY hack/packages/runtime.txt /tmp/runtime.txt
RUN apt-get update \
 && sed 's/#.*//; /^[[:space:]]*$/d' /tmp/runtime.txt | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime.txt
ARG VERSION=0.1.0
LABEL org.opencontainers.image.source="https://github.com/pipescale/pipescale" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.vendor="pipescale"
# 65532: the numeric non-root user of distroless images, which the chart's securityContext names.
USER 65532:65532

FROM runtime AS operator
LABEL org.opencontainers.image.title="pipescale-operator" \
      org.opencontainers.image.description="Autoscales ML inference pipelines to their latency SLOs at the lowest cost"
COPY --from=build /build/operator/pipescale-operator /usr/local/bin/pipescale-operator
ENTRYPOINT ["/usr/local/bin/pipescale-operator"]

FROM runtime AS model-server
LABEL org.opencontainers.image.title="pipescale-model-server" \
      org.opencontainers.image.description="An emulated model server (Open Inference Protocol) with a latency profile, for trying pipescale without GPUs"
COPY --from=build /build/tests/emulator/pipescale-model-server /usr/local/bin/pipescale-model-server
ENTRYPOINT ["/usr/local/bin/pipescale-model-server"]

FROM runtime AS router
LABEL org.opencontainers.image.title="pipescale-router" \
      org.opencontainers.image.description="A pipeline's front door: walks its DAG over the model pods (Open Inference Protocol) and measures every path"
COPY --from=build /build/router/pipescale-router /usr/local/bin/pipescale-router
ENTRYPOINT ["/usr/local/bin/pipescale-router"]
