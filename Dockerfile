# Production image: gunicorn serves the web process; run the worker from the same image with
# `python manage.py qcluster`. Configure with the variables of .env.example.
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOST=0.0.0.0 PORT=8000
WORKDIR /app
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
COPY . .
RUN DJANGO_SECRET_KEY=build-only-key-not-used-at-run-time-000000 python manage.py collectstatic --noinput -v 0 \
    && useradd --system --home /app app && mkdir -p var && chown -R app var
USER app
EXPOSE 8000
CMD ["sh", "-c", "python manage.py migrate --noinput && python manage.py sync_schedules && exec gunicorn config.wsgi --bind ${HOST}:${PORT} --workers ${WEB_CONCURRENCY:-2} --threads 4 --worker-class gthread --access-logfile -"]
