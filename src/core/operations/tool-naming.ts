import { z } from 'zod';
import { TOOL_NAMING_MODES } from '../gateways/tool-curation.js';
import { defineOperation } from '../operation.js';
import { CHANGES, READ_ONLY } from './common.js';
import { GatewayGuid, loadGateway } from './gateways.js';

const ToolNaming = z.object({ gatewayGuid: z.string(), mode: z.enum(TOOL_NAMING_MODES) });

const MODES_TEXT =
  'prefixed (the default): every tool and prompt is `<server-slug>__<name>`; when-needed: upstream names pass unchanged and only names two servers of the gateway share are prefixed, all of them.';

export const toolNamingOperations = [
  defineOperation({
    name: 'get_gateway_tool_naming',
    title: "Get a gateway's tool naming",
    description: `Shows how a gateway names the tools and prompts of its servers for hosts. ${MODES_TEXT}`,
    method: 'GET',
    path: '/gateways/:gatewayGuid/tool-naming',
    capability: 'viewAllGateways',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: ToolNaming,
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      return { gatewayGuid: gateway.guid, mode: gateway.tool_naming };
    },
  }),
  defineOperation({
    name: 'set_gateway_tool_naming',
    title: "Set a gateway's tool naming",
    description: `Chooses how a gateway names the tools and prompts of its servers for hosts; open sessions and listen streams are told their lists changed, in every replica. ${MODES_TEXT} Calls reach each upstream under its own name either way, and call logs keep that name.`,
    method: 'PUT',
    path: '/gateways/:gatewayGuid/tool-naming',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ gatewayGuid: GatewayGuid, mode: z.enum(TOOL_NAMING_MODES).describe('prefixed or when-needed') }),
    output: ToolNaming,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      if (gateway.tool_naming !== input.mode) {
        await services.db.updateTable('gateways').set({ tool_naming: input.mode }).where('guid', '=', gateway.guid).execute();
      }
      return { gatewayGuid: gateway.guid, mode: input.mode };
    },
  }),
];
