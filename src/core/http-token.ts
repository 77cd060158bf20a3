/** RFC 9110's token (§5.6.2): what a method or a header field's name is made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Whether `text` is a token: one or more of its characters, nothing else. */
export const isHttpToken = (text: string): boolean => TOKEN.test(text);
