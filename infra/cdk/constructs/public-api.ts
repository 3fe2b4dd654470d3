import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseTransferMode,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { StreamedRoute } from '../../../lib/http/streamed-routes.ts';
import {
  awsLimits,
  type GatewayResponse,
  gatewayResponseBody,
  gatewayResponses,
} from '../../../lib/limits.ts';

export interface PublicApiProps {
  readonly handler: IFunction;
  /**
   * Serves `streamedRoutes` in response-streaming mode (Lambda response streaming), so exec's
   * `?stream=1`, MCP progress and E2B's process output reach clients as produced, for up to 15 minutes.
   */
  readonly streamHandler: IFunction;
  /** The routes the control plane declares streamed (its `streamedRoutes`): each gets its own resource. */
  readonly streamedRoutes: readonly StreamedRoute[];
  /**
   * Steady-state requests per second for the stage.
   * @default 100
   */
  readonly throttlingRateLimit?: number;
  /** @default 200 */
  readonly throttlingBurstLimit?: number;
}

/**
 * The Regional REST API: every path goes to the api function as a Lambda proxy (the router validates
 * and authenticates), with stage throttling, JSON access logs, tracing, and binary media types so file
 * content travels as bytes.
 */
export class PublicApi extends Construct {
  readonly api: RestApi;

  constructor(scope: Construct, id: string, props: PublicApiProps) {
    super(scope, id);
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api = new RestApi(this, 'Api', {
      description: 'Differently sandbox control plane',
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      // Every body as bytes, both ways: file content, the E2B facade's multipart uploads and Connect
      // envelopes. API Gateway decides by the first Accept value, which clients (E2B's SDK, browsers) set
      // as they like, so only */* makes a base64 answer reliably binary; the api function decodes every
      // request body (isBase64Encoded) and marks its own answers.
      binaryMediaTypes: ['*/*'],
      cloudWatchRole: false,
      deployOptions: {
        stageName: 'live',
        throttlingRateLimit: props.throttlingRateLimit ?? 100,
        throttlingBurstLimit: props.throttlingBurstLimit ?? 200,
        tracingEnabled: true,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
        loggingLevel: MethodLoggingLevel.OFF,
      },
    });
    // API Gateway's own answers carry the error envelope too (the local runtime answers the same bodies).
    const gatewayAnswer = (id: string, type: ResponseType, response: GatewayResponse) =>
      this.api.addGatewayResponse(id, {
        type,
        statusCode: String(response.status),
        responseHeaders: { 'content-type': "'application/json'" },
        templates: { 'application/json': gatewayResponseBody(response) },
      });
    gatewayAnswer(
      'IntegrationTimeout',
      ResponseType.INTEGRATION_TIMEOUT,
      gatewayResponses.integrationTimeout,
    );
    gatewayAnswer(
      'IntegrationFailure',
      ResponseType.INTEGRATION_FAILURE,
      gatewayResponses.integrationFailure,
    );
    gatewayAnswer('RequestTooLarge', ResponseType.REQUEST_TOO_LARGE, gatewayResponses.requestTooLarge);
    const integration = new LambdaIntegration(props.handler, {
      proxy: true,
      timeout: Duration.seconds(awsLimits.apiIntegrationTimeoutSeconds),
    });
    this.api.root.addMethod('ANY', integration);
    this.api.root.addResource('{proxy+}').addMethod('ANY', integration);
    // Explicit resources take precedence over {proxy+}: each streamed route gets one, on the streaming handler.
    const streamed = new LambdaIntegration(props.streamHandler, {
      proxy: true,
      responseTransferMode: ResponseTransferMode.STREAM,
      timeout: Duration.seconds(awsLimits.apiStreamIntegrationTimeoutSeconds),
    });
    for (const route of props.streamedRoutes) {
      this.api.root.resourceForPath(route.path).addMethod(route.method, streamed);
    }
  }
}
