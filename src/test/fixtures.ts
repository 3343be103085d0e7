// Request bodies that several test files build.

export const kycApplication = (email: string, over: Record<string, unknown> = {}) => ({
  data: {
    type: 'KycApplication',
    attributes: {
      firstName: 'Ada',
      lastName: 'Lovelace',
      dateOfBirth: '1990-12-10',
      email,
      address: { street: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
      ...over,
    },
  },
});

/** Accrue's shape of the same application: type Kyc, a flat US address, phone. */
export const accrueKycApplication = (email: string, over: Record<string, unknown> = {}) => ({
  data: {
    type: 'Kyc',
    attributes: {
      ipAddress: '203.0.113.7',
      firstName: 'Ada',
      lastName: 'Lovelace',
      phone: '5551234567',
      dateOfBirth: '1990-12-10',
      email,
      street: '1 Main St',
      city: 'Springfield',
      state: 'IL',
      postalCode: '62701',
      ...over,
    },
  },
});

/** A webhook registration; the default URL is public, as the default address policy requires. */
export const webhookBody = (attributes: Record<string, unknown>) => ({
  data: {
    type: 'Webhook',
    attributes: { name: 'Orders', url: 'https://hooks.example.com/coffer', topics: ['*'], ...attributes },
  },
});
