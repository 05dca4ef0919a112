# Build stage: compile the release binary.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY lua ./lua
RUN cargo build --release --locked && strip target/release/oxidis-server

# Runtime stage: a small image with only the binary, run as a non-root user.
FROM debian:bookworm-slim
RUN useradd --system --uid 999 --home-dir /data --create-home oxidis
COPY --from=build /src/target/release/oxidis-server /usr/local/bin/oxidis-server
USER oxidis
WORKDIR /data
EXPOSE 6379
# Listen on all interfaces inside the container, as the official redis image does.
CMD ["oxidis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/data"]
