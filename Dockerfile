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
COPY console ./console
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
# The volume starts from the image's /data: owned by the user the service runs as.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
EXPOSE 8080
USER node
CMD ["node", "--import", "tsx", "src/main.ts"]
