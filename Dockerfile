# The service for a real deployment: Postgres and ClickHouse are servers (see
# docker-compose.yml), so the 500 MB embedded ClickHouse (optional dependency chdb)
# is left out.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm install --omit=dev --omit=optional --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY migrations ./migrations
COPY clickhouse ./clickhouse
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
VOLUME /data
EXPOSE 8080
USER node
CMD ["node", "--import", "tsx", "src/main.ts"]
