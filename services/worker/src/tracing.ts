// The first import of main.ts: tracing starts before pg, ioredis, express and undici are loaded,
// so its instrumentations patch them (docs/architecture.md, "Tracing").
import { startTelemetryFromEnv } from '@taskapi/telemetry';

startTelemetryFromEnv('worker');
