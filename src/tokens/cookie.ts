/** The cookie that carries the token (spec §2): set by Login, read by every operation, the client and the guard. */
export const TOKEN_COOKIE = 'AuthToken1'
