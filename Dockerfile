# Production image: the web server is the default command (config/web.py); the worker runs from
# the same image as `python manage.py qcluster`. Migrations are not run here: compose.yaml's
# one-shot `migrate` service (or your deploy step) runs them once per release, before web and
# worker start. Configure with the variables of .env.example; no secret is in the image.
FROM python:3.12-slim

ARG GIT_COMMIT=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    PROMETHEUS_MULTIPROC_DIR=/app/var/metrics \
    GIT_COMMIT=${GIT_COMMIT}
WORKDIR /app

COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock

COPY . .
# A throwaway key only for collectstatic; the running container must be given its own.
RUN DJANGO_SECRET_KEY=build-only-key-not-used-at-run-time-000000 \
      python manage.py collectstatic --noinput -v 0 \
    && useradd --system --uid 10001 --home /app app \
    && mkdir -p var/media var/metrics \
    && chown -R 10001 var

USER 10001
EXPOSE 8000
# /healthz answers while the web server serves, asked with an allowed Host (config/healthcheck.py);
# the worker service overrides this (compose.yaml).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-m", "config.healthcheck"]
# The web server as the settings shape it (config/web.py: WEB_SERVER, granian by default;
# WEB_CONCURRENCY, WEB_THREADS, WEB_BACKPRESSURE, WEB_HEADER_TIMEOUT_SECONDS, HOST, PORT), in
# place of this process. SIGTERM (docker stop): it finishes requests in flight within 8 s,
# under docker's 10 s.
CMD ["python", "-m", "config.web"]
