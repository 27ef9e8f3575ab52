import { exportingService } from './tracing-figures';

/** A protobuf `KeyValue` attribute (key = 1, value = 2 → AnyValue.string_value = 1), length-prefixed as field 1 of a Resource. */
function protobufAttribute(key: string, value: string): Buffer {
  const str = (no: number, b: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2, b.length]), b]);
  return str(1, Buffer.concat([str(1, Buffer.from(key)), str(2, str(1, Buffer.from(value)))]));
}

describe('exportingService (the bench sink counts exports by service)', () => {
  it('reads service.name from the resource at the start of a protobuf export', () => {
    for (const service of ['api', 'worker', 'webhook-dispatcher'] as const) {
      const resource = Buffer.concat([protobufAttribute('service.name', service), protobufAttribute('process.pid', '1234')]);
      const head = Buffer.concat([Buffer.from([0x0a, 0xff, 0x01, 0x0a, resource.length]), resource, Buffer.from('span bytes')]);
      expect(exportingService(head)).toBe(service);
    }
  });

  it('reads it from a JSON export too', () => {
    const head = Buffer.from('{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"webhook-dispatcher"}}');
    expect(exportingService(head)).toBe('webhook-dispatcher');
  });

  it('says other when the first chunk names no known service', () => {
    expect(exportingService(Buffer.from('{"resourceSpans":[]}'))).toBe('other');
  });
});
