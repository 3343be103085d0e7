// When to ask a provider again about something it has not finished (a KYC application, a bank
// transfer): after half the time it has been waiting, between one second and ten minutes. A
// transfer is asked about a few times in its first seconds and then about every ten minutes
// over the days an ACH transfer takes, whatever the number of processes.
export const MIN_CHECK_DELAY_MS = 1_000;
const MAX_CHECK_DELAY_MS = 600_000;

export function nextCheckAt(now: Date, waitingSince: Date): Date {
  const waited = Math.max(0, now.getTime() - waitingSince.getTime());
  return new Date(now.getTime() + Math.min(MAX_CHECK_DELAY_MS, Math.max(MIN_CHECK_DELAY_MS, waited / 2)));
}
