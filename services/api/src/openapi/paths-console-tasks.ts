// `/api/console/tasks*`: the account's tasks read with a login session, for the console pages.
// The task API (`/api/tasks*`) stays API-key only.
import { BASE_HEADERS, SESSION_SECURITY, errorResponse, header, headers, json, parameter, response, schema, type OpenApiObject } from './refs';
import { sessionErrors, taskListBadRequest } from './responses';

const TAGS = ['Console tasks'];
const FILE_URLS = 'File `url`s point at `GET /api/console/tasks/{publicId}/files/{name}`, which the session can fetch.';
const fileBody = { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } };

export const consoleTaskPaths: Record<string, OpenApiObject> = {
  '/api/console/tasks': {
    get: {
      tags: TAGS,
      operationId: 'listConsoleTasks',
      summary: "List the account's tasks (session)",
      description: `\`GET /api/tasks\` for a login session: the same filters, pagination and task JSON. ${FILE_URLS} Refuses \`X-Api-Key\`.`,
      security: SESSION_SECURITY,
      parameters: [parameter('StatusFilter'), parameter('KindFilter'), parameter('Limit'), parameter('Cursor')],
      responses: {
        '200': { description: 'One page of tasks, newest first.', headers: headers(...BASE_HEADERS), content: json(schema('TaskList')) },
        '400': taskListBadRequest(BASE_HEADERS),
        ...sessionErrors('get'),
      },
    },
  },
  '/api/console/tasks/{publicId}': {
    get: {
      tags: TAGS,
      operationId: 'getConsoleTask',
      summary: 'Get a task (session)',
      description: `\`GET /api/tasks/{publicId}\` for a login session. ${FILE_URLS}`,
      security: SESSION_SECURITY,
      parameters: [parameter('PublicId')],
      responses: {
        '200': { description: 'The task.', headers: headers(...BASE_HEADERS), content: json(schema('Task')) },
        '400': response('MalformedRequest'),
        '404': errorResponse("No such task for this account (unknown id, malformed id, or another account's task).", 'Error', ['TaskNotFound']),
        ...sessionErrors('get'),
      },
    },
  },
  '/api/console/tasks/{publicId}/files/{name}': {
    get: {
      tags: TAGS,
      operationId: 'getConsoleTaskFile',
      summary: 'Download a file of a task (session)',
      description: 'The console\'s previews: the same bytes and headers as `GET /api/tasks/{publicId}/files/{name}`, including `Range` and conditional requests.',
      security: SESSION_SECURITY,
      parameters: [parameter('PublicId'), parameter('FileName')],
      responses: {
        '200': {
          description: 'The file.',
          headers: { ...headers(...BASE_HEADERS, 'Content-Disposition'), 'Cache-Control': header('Cache-Control-File') },
          content: fileBody,
        },
        '206': { description: 'The requested byte range of the file.', headers: headers(...BASE_HEADERS, 'Content-Disposition'), content: fileBody },
        '304': { description: 'Conditional request and the file is unchanged.', headers: headers(...BASE_HEADERS) },
        '400': response('MalformedRequest'),
        '404': errorResponse('No such task for this account, or the task has no file of that name.', 'Error', ['TaskNotFound', 'FileNotFound']),
        '412': errorResponse('`If-Match` / `If-Unmodified-Since` precondition failed.', 'Error', ['MalformedRequest']),
        '416': errorResponse('The `Range` cannot be satisfied.', 'Error', ['MalformedRequest']),
        ...sessionErrors('get'),
      },
    },
  },
};
