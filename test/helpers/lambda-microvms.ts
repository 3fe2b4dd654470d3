import { LambdaMicrovmsClient } from '@aws-sdk/client-lambda-microvms';

/** The fake service's image and the access key it admits. */
export const fakeImage = 'arn:aws:lambda:us-east-1:123456789012:microvm-image:differently-guest';
export const fakeAccessKeyId = 'AKIAFAKEMICROVMS0001';
const fakeSecret = 'fake-secret-access-key-0123456789abcdef';

/** The real SDK client pointed at a fake service, signing with the given key, without retries. */
export function microvmsClient(endpoint: string, keyId = fakeAccessKeyId, secret = fakeSecret) {
  return new LambdaMicrovmsClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: keyId, secretAccessKey: secret },
    maxAttempts: 1,
  });
}
