/**
 * A device id the service accepts (at least 16 characters) that stays readable in a test: the
 * label plus a fixed suffix, so one label is one device.
 */
export const testDeviceId = (label: string): string => `${label}.test-device-id`;
