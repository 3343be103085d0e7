import { type Api, unwrap } from './shared.ts';

export const gifts = (api: Api) => ({
  /** A gift's remaining balance, by the lookup id the customer presents. */
  get: (lookUpId: string) =>
    unwrap(api.GET('/api/v1/gifts/{lookUpId}', { params: { path: { lookUpId } } })).then((r) => r.data),
});
