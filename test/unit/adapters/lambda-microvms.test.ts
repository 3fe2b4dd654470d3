import { describe, expect, it } from 'vitest';
import { lambdaMicrovmsConfigSchema } from '../../../adapters/lambda-microvms/config.ts';
import {
  classifyMicrovmError,
  endpointUrl,
  microvmStateOf,
} from '../../../adapters/lambda-microvms/lambda-microvms-adapter.ts';

const image = 'arn:aws:lambda:us-east-1:123456789012:microvm-image:guest';

describe('lambda-microvms', () => {
  it('reaches a host-name endpoint over HTTPS and keeps an endpoint that names its scheme', () => {
    expect(endpointUrl('microvm-abc.lambda-microvm.us-east-1.on.aws')).toBe(
      'https://microvm-abc.lambda-microvm.us-east-1.on.aws',
    );
    expect(endpointUrl('http://127.0.0.1:4000')).toBe('http://127.0.0.1:4000');
  });

  it('maps the service states onto the contract', () => {
    expect(
      ['PENDING', 'RUNNING', 'SUSPENDING', 'SUSPENDED', 'TERMINATING', 'TERMINATED', 'NEW'].map(
        microvmStateOf,
      ),
    ).toEqual(['pending', 'running', 'paused', 'paused', 'gone', 'gone', 'pending']);
  });

  it('turns not-found into the instance only when an instance was asked for', () => {
    const missing = Object.assign(new Error('no such thing'), { name: 'ResourceNotFoundException' });
    expect(classifyMicrovmError(missing, 'GetMicrovm', 'microvm-1')).toMatchObject({ code: 'not_found' });
    expect(classifyMicrovmError(missing, 'RunMicrovm')).toMatchObject({ code: 'invalid_request' });
    expect(classifyMicrovmError(new TypeError('fetch failed'), 'ListMicrovms')).toMatchObject({
      code: 'provider_unavailable',
    });
    const conflict = Object.assign(new Error('busy'), { name: 'ConflictException' });
    expect(classifyMicrovmError(conflict, 'SuspendMicrovm', 'microvm-1')).toMatchObject({
      code: 'invalid_state',
    });
  });

  it('refuses a config the service would refuse, naming the field', () => {
    expect(lambdaMicrovmsConfigSchema.safeParse({ image: 'guest' }).success).toBe(false);
    expect(
      lambdaMicrovmsConfigSchema.safeParse({
        image,
        idlePolicy: { maxIdleDurationSeconds: 30, suspendedDurationSeconds: 0, autoResumeEnabled: true },
      }).error?.issues[0]?.path,
    ).toEqual(['idlePolicy', 'maxIdleDurationSeconds']);
    expect(lambdaMicrovmsConfigSchema.parse({ image })).toMatchObject({ guestPort: 8080, vcpus: 2 });
  });
});
