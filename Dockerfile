# The trainsched image: built from this repository on Debian's packages, the runtime stage
# holding the binary and the shared libraries it links (no shell needed at run time).
#   docker build -t trainsched:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config git ca-certificates \
      libjansson-dev libyaml-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev \
      libprotobuf-c-dev protobuf-c-compiler
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_TESTS=OFF -DTS_BENCH=OFF \
 && cmake --build /build -j"$(nproc)" --target trainsched

FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      ca-certificates libjansson4 libyaml-0-2 libssl3 libcurl4 libmicrohttpd12 libprotobuf-c1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/trainsched /usr/local/bin/trainsched
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/trainsched"]
CMD ["serve"]
