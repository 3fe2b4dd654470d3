import { CfnOutput } from 'aws-cdk-lib';
import {
  BasePathMapping,
  DomainName,
  EndpointType,
  type RestApi,
  SecurityPolicy,
} from 'aws-cdk-lib/aws-apigateway';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { ARecord, HostedZone, RecordTarget } from 'aws-cdk-lib/aws-route53';
import { ApiGatewayDomain } from 'aws-cdk-lib/aws-route53-targets';
import { Construct } from 'constructs';

export interface SandboxDomainProps {
  readonly api: RestApi;
  /** config e2b.sandboxDomain: hosts `<port>-<sandboxId>.<domain>` reach the API. */
  readonly domainName: string;
  /** An ACM certificate in the stack's region for `*.<domain>`. */
  readonly certificateArn: string;
  /** A Route 53 hosted zone for the domain: the wildcard record is made there. Without it, make it yourself. */
  readonly hostedZone?: { id: string; name: string } | undefined;
}

/**
 * The sandboxes' hosts (docs/deploy.md "Sandbox hosts"): the wildcard custom domain `*.<domain>` on the
 * REST API, mapped to its stage at the root, so `<port>-<sandboxId>.<domain>` arrives at the api with that
 * Host and the control plane routes it to the sandbox (lib/e2b/surface.ts). The wildcard record is made
 * when the domain's hosted zone is given; otherwise its target is an output.
 */
export class SandboxDomain extends Construct {
  readonly domain: DomainName;

  constructor(scope: Construct, id: string, props: SandboxDomainProps) {
    super(scope, id);
    this.domain = new DomainName(this, 'Wildcard', {
      domainName: `*.${props.domainName}`,
      certificate: Certificate.fromCertificateArn(this, 'Certificate', props.certificateArn),
      endpointType: EndpointType.REGIONAL,
      securityPolicy: SecurityPolicy.TLS_1_2,
    });
    new BasePathMapping(this, 'Root', { domainName: this.domain, restApi: props.api });
    if (props.hostedZone !== undefined) {
      const zone = HostedZone.fromHostedZoneAttributes(this, 'Zone', {
        hostedZoneId: props.hostedZone.id,
        zoneName: props.hostedZone.name,
      });
      new ARecord(this, 'Record', {
        zone,
        recordName: `*.${props.domainName}`,
        target: RecordTarget.fromAlias(new ApiGatewayDomain(this.domain)),
      });
    } else {
      new CfnOutput(this, 'RecordTarget', {
        description: `Point *.${props.domainName} (CNAME or alias) at this name`,
        value: this.domain.domainNameAliasDomainName,
      });
    }
  }
}
