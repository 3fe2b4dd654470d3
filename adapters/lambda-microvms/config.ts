import * as z from '../../lib/zod.ts';

/** A MicroVM image's ARN: what RunMicrovm requires (the bare name is refused by the service). */
export const microvmImageArnPattern =
  /^arn:[a-z0-9-]+:lambda:[a-z0-9-]+:\d{12}:microvm-image:[A-Za-z0-9_-]+$/;
const roleArnPattern = /^arn:[a-z0-9-]+:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const connectorArnPattern = /^arn:[a-z0-9-]+:lambda:[a-z0-9-]+:(aws|\d{12}):network-connector:[\w:-]+$/;

/**
 * A lambda-microvms pool's `config`: what preflight, synth, the cold start and the admin API check. Kept
 * apart from the adapter so validating a config never loads the adapter (or the AWS SDK client).
 */
export const lambdaMicrovmsConfigSchema = z.lazy(() =>
  z.strictObject({
    /** The image every sandbox of the pool runs: it must run the guest agent (examples/lambda-microvms/). */
    image: z.string().check(
      z.regex(microvmImageArnPattern, {
        error: 'the ARN of a MicroVM image (arn:aws:lambda:<region>:<account>:microvm-image:<name>)',
      }),
    ),
    /** The image version (major.minor); the latest active version when left out. */
    imageVersion: z.optional(z.string().check(z.regex(/^\S+$/))),
    /** The region of the image; the function's own region (AWS_REGION) when left out. */
    region: z.optional(
      z.string().check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, { error: 'an AWS region such as us-east-1' })),
    ),
    /** Another API endpoint (LocalStack, a test's fake server); AWS's own when left out. */
    endpoint: z.optional(z.url({ protocol: /^https?$/, error: 'an http(s) URL' })),
    /** The role the VM runs under (its CloudWatch logs, anything the sandbox may call); none when left out. */
    executionRoleArn: z.optional(
      z.string().check(z.regex(roleArnPattern, { error: 'the ARN of an IAM role' })),
    ),
    /**
     * Suspend a VM after this much silence on its endpoint and end it after this long suspended. Left out
     * (the default), a sandbox runs until it is paused, deleted or reaches its lifetime: a busy job with no
     * inbound traffic counts as idle to the service.
     */
    idlePolicy: z.optional(
      z.strictObject({
        maxIdleDurationSeconds: z.int().check(z.gte(60), z.lte(28_800)),
        suspendedDurationSeconds: z.int().check(z.gte(0), z.lte(28_800)),
        autoResumeEnabled: z.boolean(),
      }),
    ),
    ingressNetworkConnectors: z.optional(
      z.array(z.string().check(z.regex(connectorArnPattern))).check(z.maxLength(10)),
    ),
    egressNetworkConnectors: z.optional(
      z.array(z.string().check(z.regex(connectorArnPattern))).check(z.maxLength(10)),
    ),
    /** The port the guest agent listens on inside the VM (the service routes 443 to 8080 by default). */
    guestPort: z._default(z.int().check(z.gte(1), z.lte(65_535)), 8080),
    /** The size the image was built for (an image is single-size): what placement may promise. */
    vcpus: z._default(z.int().check(z.gte(1), z.lte(16)), 2),
    memoryMiB: z._default(z.int().check(z.gte(128), z.lte(32_768)), 4096),
    /** How long a VM may take from RunMicrovm to a guest agent that answers. */
    readyTimeoutSeconds: z._default(z.int().check(z.gte(1), z.lte(900)), 120),
    pollIntervalMs: z._default(z.int().check(z.gte(10), z.lte(10_000)), 1000),
    /** Upper bound on one request to the guest agent; the caller's own deadline applies first. */
    guestTimeoutSeconds: z._default(z.int().check(z.gte(1), z.lte(8100)), 8100),
  }),
);
export type LambdaMicrovmsConfig = z.infer<typeof lambdaMicrovmsConfigSchema>;

/** The service's own limit on a VM's lifetime (RunMicrovm maximumDurationInSeconds). */
export const maxMicrovmSeconds = 28_800;
