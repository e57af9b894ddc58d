package httpclient

// ModeHeaderForTest is modeHeader, for the external test that checks it
// against the middleware's.
const ModeHeaderForTest = modeHeader
