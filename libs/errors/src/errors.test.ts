import { DomainError, violationError } from './index';

describe('DomainError', () => {
  it('carries the spec type of its code', () => {
    expect(new DomainError('payment_required', 'x').type).toBe('payment_required');
    expect(new DomainError('task_not_found', 'x').type).toBe('not_found_error');
  });
  it('maps a 422 violation to conflicting_fields and keeps the field and rule', () => {
    const e = violationError({ status: 422, type: 'invalid_request_error', field: 'image_urls', rule: 'exclusive', message: 'm' });
    expect(e.code).toBe('conflicting_fields');
    expect(e.details).toEqual({ field: 'image_urls', rule: 'exclusive' });
  });
  it('maps an Omni duration violation to its own type', () => {
    const e = violationError({ status: 400, type: 'invalid_duration', field: 'duration', rule: 'enum', message: 'm' });
    expect(e.type).toBe('invalid_duration');
  });
});
