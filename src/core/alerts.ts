/**
 * What the rest of the service needs to raise an alert. The call-log store
 * implements it (alerts are records in ClickHouse, read by list_alerts/get_alert);
 * raisers pass already-redacted debug context and never a secret.
 */
export type AlertMessageType = 'info' | 'warning' | 'error';

export interface NewAlert {
  organizationGuid: string;
  /** e.g. server_validation_failed, upstream_auth_failed, upstream_call_failed, oauth_refresh_failed, collector_export_failed */
  code: string;
  messageType: AlertMessageType;
  subject: string;
  message: string;
  /** Subject and message with unresolved placeholders, and the values that fill them. */
  dynamicContent?: { subject: string; message: string; values?: Record<string, string> };
  /** Response status, headers, body and engine details, redacted by the raiser. */
  debugContext?: Record<string, unknown>;
  /** Guids of the resources concerned: server, gateway, assignment, identity, connection. */
  relatedResourceIds?: string[];
  relatedContext?: Record<string, unknown>;
}

export interface AlertSink {
  raise(alert: NewAlert): Promise<void>;
}
