# The service image: Node 24 runs the TypeScript sources directly (type stripping), so there is no build stage.
FROM node:24-slim

WORKDIR /app
ENV NODE_ENV=production \
    PORT=8080 \
    RULES_DATA_DIR=/app/data

# Dependencies first: this layer is reused until package-lock.json changes.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

COPY src ./src
# The embedded PGlite database lives here when DATABASE_URL is not set.
RUN mkdir -p /app/data && chown node:node /app/data

USER node
EXPOSE 8080
# node:24-slim has no curl; Node's own fetch asks the service.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "src/main.ts"]
