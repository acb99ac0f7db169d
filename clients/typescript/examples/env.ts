// Where the examples find their sandbox: BERTH_URL and BERTH_TOKEN.
export const url = process.env.BERTH_URL ?? "ws://127.0.0.1:7100/v1";
export const token = process.env.BERTH_TOKEN ?? "";
