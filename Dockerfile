# Container images of coalesce-server. Two targets:
#
#   docker build --target cpu  -t coalesce:cpu  .    (also the default: the last stage)
#   docker build --target cuda -t coalesce:cuda .
#
#   docker run -p 8000:8000 -p 8001:8001 -p 8002:8002 -v "$PWD/examples/models:/models" coalesce:cpu
#
# Both serve KServe v2 over HTTP on 8000 and gRPC on 8001 and Prometheus
# metrics on 8002, run as UID 10001,
# and read the model repository from the /models volume. The images are
# linted (hadolint) and checked against the repository by
# tests/e2e/test_dockerfile.py; no Docker engine runs on the development
# machines or in CI, so they are not built there.
#
# cpu: debian:12-slim with the server's shared libraries from Debian 12, the
# same packages scripts/bootstrap installs and CI tests with; built in
# debian:12 with the C++ build dependencies only.
#
# cuda: NVIDIA's CUDA runtime image with cuDNN 9 (Ubuntu 24.04; NVIDIA
# publishes these images for Ubuntu and UBI only). Why its server is still
# built on Debian 12 and not in the matching nvidia/cuda devel image: Ubuntu
# 24.04's oneDNN is 3.1 (libdnnl3), and oneDNN 3 removed the API that
# kernels/cpu/conv.cc and dnnl_util.cc are written against
# (convolution_forward::desc, post_ops::append_eltwise with a scale), which
# Debian 12's oneDNN 2.6 has. So the cuda build runs on Debian 12 too, with
# nvcc, the CUDA headers and cuDNN's headers copied from the nvidia/cuda
# devel image (NVIDIA's toolkit supports Debian 12 and its GCC 12, the
# combination the development machines build the plugin with), for sm_80 and
# sm_90 (top-level CMakeLists.txt). What lands on the runtime image is the
# relocatable bundle of scripts/bundle: the binaries, every shared library
# they load and Debian's own loader, so no Debian library has to match an
# Ubuntu one (tests/e2e/test_bundle.py checks that the bundle loads nothing
# from the host). The base image brings cuBLASLt and cuDNN, which the CUDA
# plugin dlopens (COALESCE_CUDA_LIBRARY_PATH below); libcuda.so.1 and NVML's
# libnvidia-ml.so.1 come from the host's driver, mounted by the NVIDIA
# container toolkit (the base image asks for the compute and utility
# capabilities).
#
# No HEALTHCHECK: Kubernetes' probes check the server (gRPC probes on
# grpc.health.v1.Health, which the server serves), and a Docker HEALTHCHECK
# would need a gRPC client in the image.
#
# apt package versions are not pinned (hadolint DL3008): the base image tags
# pin the Debian point release, and exact package versions leave the Debian
# archive at each point release and security update, which would break the
# build rather than bring the fix.

# ---------------------------------------------------------------------------
# Build dependencies: the C++ build's part of scripts/bootstrap's
# DEBIAN_PACKAGES (not ccache, the test libraries, the prometheus server or
# Python; prometheus-cpp-dev is the metrics client library the server links).
FROM debian:12.11 AS build-deps
ARG DEBIAN_FRONTEND=noninteractive
# Unpinned on purpose: see DL3008 in the header.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libspdlog-dev prometheus-cpp-dev libonnx-dev libabsl-dev libdnnl-dev \
      nlohmann-json3-dev libcurl4-openssl-dev libcli11-dev \
      libboost1.81-dev zlib1g-dev \
      ocl-icd-opencl-dev opencl-headers \
 && rm -rf /var/lib/apt/lists/*

# The sources both builds compile (copied into each build after its own
# dependencies, so a source change does not redo them).
FROM scratch AS sources
COPY CMakeLists.txt /src/
COPY base /src/base
COPY batching /src/batching
COPY benchmarks /src/benchmarks
COPY engine /src/engine
COPY kernels /src/kernels
COPY proto /src/proto
COPY server /src/server
COPY tools /src/tools

# ---------------------------------------------------------------------------
# CPU build: just the runtime targets. COALESCE_NATIVE=OFF: -march=native
# would tie the binary to the build machine's CPU; pass e.g.
# --build-arg COALESCE_CXX_FLAGS=-march=x86-64-v3 to target newer CPUs.
FROM build-deps AS cpu-build
ARG COALESCE_CXX_FLAGS=""
WORKDIR /src
COPY --from=sources /src ./
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCOALESCE_BUILD_TESTS=OFF -DCOALESCE_ENABLE_CUDA=OFF -DCOALESCE_NATIVE=OFF \
      -DCMAKE_CXX_FLAGS="${COALESCE_CXX_FLAGS}" \
 && cmake --build build -j"$(nproc)" --target coalesce-server coalesce-bench \
 && install -d /opt/coalesce/bin \
 && install -s build/server/coalesce-server build/benchmarks/coalesce_bench/coalesce-bench \
      /opt/coalesce/bin/

# ---------------------------------------------------------------------------
# Where the CUDA toolkit and cuDNN's headers come from (nothing runs here).
FROM nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04 AS cuda-toolkit

# CUDA build: the server, coalesce-bench, the tools and the CUDA plugin,
# bundled by scripts/bundle. No test is built (COALESCE_BUILD_TESTS=OFF): the
# tools need none of the test code.
FROM build-deps AS cuda-build
ARG DEBIAN_FRONTEND=noninteractive
ARG COALESCE_CXX_FLAGS=""
# Unpinned on purpose: see DL3008 in the header.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends xz-utils python3-pip \
 && rm -rf /var/lib/apt/lists/*
COPY --from=cuda-toolkit /usr/local/cuda-13.0 /usr/local/cuda-13.0
# cuDNN's Debian packages install cudnn*_v9.h and name them cudnn*.h through
# update-alternatives; the plugin includes <cudnn.h>. pip: CMake fetches the
# cuDNN frontend's headers from PyPI (engine/cuda/CMakeLists.txt).
COPY --from=cuda-toolkit /usr/include/x86_64-linux-gnu/cudnn*_v9.h \
     /usr/local/cuda-13.0/targets/x86_64-linux/include/
RUN for f in /usr/local/cuda-13.0/targets/x86_64-linux/include/cudnn*_v9.h; do \
      ln -s "$(basename "$f")" "${f%_v9.h}.h"; \
    done \
 && ln -s /usr/local/cuda-13.0 /usr/local/cuda
ENV PATH=/usr/local/cuda/bin:${PATH}
WORKDIR /src
COPY --from=sources /src ./
COPY tests tests
COPY examples examples
COPY scripts scripts
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCOALESCE_BUILD_TESTS=OFF -DCOALESCE_ENABLE_CUDA=ON -DCOALESCE_NATIVE=OFF \
      -DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_CXX_FLAGS="${COALESCE_CXX_FLAGS}" \
 && cmake --build build -j"$(nproc)" --target coalesce-server coalesce-bench \
      coalesce-onnx-run coalesce-device-check coalesce_cuda \
 && bash scripts/bundle --build build --out /tmp/bundle \
 && mv /tmp/bundle/coalesce /opt/coalesce

# ---------------------------------------------------------------------------
# Target cuda.
FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04 AS cuda
ARG COALESCE_VERSION=0.1.0
ARG COALESCE_REVISION=unknown
LABEL org.opencontainers.image.title="coalesce-server (CUDA)" \
      org.opencontainers.image.description="KServe v2 / Triton-compatible gRPC inference server with dynamic batching; CPU engine and CUDA plugin (cuBLASLt, cuDNN 9)" \
      org.opencontainers.image.version="${COALESCE_VERSION}" \
      org.opencontainers.image.revision="${COALESCE_REVISION}" \
      org.opencontainers.image.base.name="docker.io/nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04"
RUN groupadd --gid 10001 coalesce \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin coalesce \
 && mkdir /models
# bin/ holds scripts/bundle's wrappers, which exec the binaries through the
# bundled loader (so SIGTERM reaches the server); lib/libcoalesce_cuda.so is
# where the server looks for the plugin.
COPY --from=cuda-build /opt/coalesce /opt/coalesce
ENV COALESCE_CUDA_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu
WORKDIR /opt/coalesce
USER 10001:10001
EXPOSE 8000 8001 8002
VOLUME ["/models"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/coalesce/bin/coalesce-server"]
CMD ["--model-repository=/models"]

# ---------------------------------------------------------------------------
# Target cpu (the default). The runtime packages of every library
# coalesce-server and coalesce-bench link (ldd, mapped with dpkg -S), less
# libc6 and libgcc-s1, which every Debian image has; apt brings what those
# libraries need in turn (libcurl4's TLS and compression libraries).
FROM debian:12.11-slim AS cpu
ARG DEBIAN_FRONTEND=noninteractive
ARG COALESCE_VERSION=0.1.0
ARG COALESCE_REVISION=unknown
LABEL org.opencontainers.image.title="coalesce-server" \
      org.opencontainers.image.description="KServe v2 / Triton-compatible gRPC inference server with dynamic batching; CPU engine" \
      org.opencontainers.image.version="${COALESCE_VERSION}" \
      org.opencontainers.image.revision="${COALESCE_REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/debian:12.11-slim"
# Unpinned on purpose: see DL3008 in the header.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libabsl20220623 libc-ares2 libcivetweb1 libcurl4 libdnnl2 libfmt9 libgomp1 \
      libgrpc++1.51 libgrpc29 libonnx1 libprometheus-cpp-core1.0 \
      libprometheus-cpp-pull1.0 libprotobuf32 libre2-9 libspdlog1.10 libssl3 \
      libstdc++6 ocl-icd-libopencl1 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 coalesce \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin coalesce \
 && mkdir /models
COPY --from=cpu-build /opt/coalesce /opt/coalesce
WORKDIR /opt/coalesce
USER 10001:10001
EXPOSE 8000 8001 8002
VOLUME ["/models"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/coalesce/bin/coalesce-server"]
CMD ["--model-repository=/models"]
