// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title Checks tlsproof EVM attestations on chain.
/// @notice A tlsproof notary signs, beside its tlsproof/1 signature, an EIP-712 digest of what it attested
/// (README.md, "EVM attestation"; src/proof/evm-attestation.ts builds the same digest off chain). This contract
/// rebuilds that digest from the fields and revealed segments it is given, recovers the signer, accepts only
/// notaries on its owner's allow-list, and serves byte ranges of the verified segments.
/// Proxy-mode attestations (the notary relayed the connection and saw the response in clear) are signed under
/// another type name, `ProxyAttestation`: `verify` never accepts them; `verifyProxy` does once the owner allows it.
/// A proxy-mode attestation whose request the notary never saw (`requestHidden`) proves the server's answer but not
/// the request it answers (method, URL, Host): refused unless the owner accepts such attestations too.
contract TlsproofVerifier {
    /// The attested fields, as in the proof body. `revealed` travels beside it (see `verify`).
    struct Attestation {
        bytes16 requestId;
        string serverName;
        /// The port the notary dialled (proxy mode); 0 in MPC mode, whose notary never dials the server.
        uint16 serverPort;
        /// Unix seconds: when the exchange began (proxy mode: the server's ServerHello passed the notary's relay).
        uint64 connectionTime;
        /// Unix seconds: when it ended (proxy mode: the server's last byte; MPC mode: the notary's Verifier finished).
        uint64 responseTime;
        uint64 notarizedAt;
        uint32 sentLength;
        uint32 recvLength;
        bool requestHidden;
        bool testTrustAnchor;
        /// The address the proof was made for (`T-RECIPIENT`); 0 when it names none. A dapp that rewards the
        /// proof's caller checks it against msg.sender, so a proof seen in the mempool is of no use to another.
        address recipient;
        /// What the notary stated of the answer beyond its bytes, in the order asked.
        Claim[] claims;
    }

    /// A claim (src/claims/claim.ts): kind 0 states `value` (JSON text); 1 states whether `subject op operand`
    /// `holds`, never the value; 2 states `commitment`, keccak256(salt ‖ value's JSON text). Other members are empty.
    struct Claim {
        uint8 kind;
        string subject;
        string op;
        string operand;
        bool holds;
        string value;
        bytes32 commitment;
    }

    /// What a range read by `verifiedRange` is evidence of.
    struct Evidence {
        string serverName;
        uint16 serverPort;
        uint64 connectionTime;
        uint64 responseTime;
        uint64 notarizedAt;
        bool requestHidden;
        address recipient;
        bytes32 attestationDigest;
    }

    bytes32 public constant ATTESTATION_TYPEHASH = keccak256(
        "Attestation(bytes16 requestId,string serverName,uint16 serverPort,uint64 connectionTime,uint64 responseTime,"
        "uint64 notarizedAt,uint32 sentLength,uint32 recvLength,bool requestHidden,bool testTrustAnchor,bytes revealed,"
        "address recipient,Claim[] claims)"
        "Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)"
    );
    bytes32 public constant PROXY_ATTESTATION_TYPEHASH = keccak256(
        "ProxyAttestation(bytes16 requestId,string serverName,uint16 serverPort,uint64 connectionTime,uint64 responseTime,"
        "uint64 notarizedAt,uint32 sentLength,uint32 recvLength,bool requestHidden,bool testTrustAnchor,bytes revealed,"
        "address recipient,Claim[] claims)"
        "Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)"
    );
    bytes32 public constant CLAIM_TYPEHASH =
        keccak256("Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)");
    /// No chainId or verifyingContract: an attestation states a fact, valid on every chain and in every contract.
    bytes32 public constant DOMAIN_SEPARATOR = keccak256(
        abi.encode(keccak256("EIP712Domain(string name,string version)"), keccak256("tlsproof"), keccak256("1"))
    );
    uint8 public constant SENT = 0;
    uint8 public constant RECV = 1;
    /// Bytes before each segment's data in `revealed`: uint8 direction, uint32 start, uint32 length.
    uint256 private constant SEGMENT_HEADER = 9;
    /// Half the secp256k1 group order: a larger s is the malleated twin of a valid signature (EIP-2).
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    address public owner;
    mapping(address => bool) public isNotary;
    /// Attestations made under a test trust anchor prove nothing about the public web: refused unless enabled.
    bool public acceptsTestTrustAnchor;
    /// Proxy-mode attestations rest on the notary's network path to the server: refused unless enabled.
    bool public acceptsProxyMode;
    /// Attestations whose request the notary never saw may answer any request on that server: refused unless enabled.
    bool public acceptsHiddenRequest;

    event OwnerChanged(address indexed owner);
    event NotaryAllowed(address indexed notary, bool allowed);
    event TestTrustAnchorAccepted(bool accepted);
    event ProxyModeAccepted(bool accepted);
    event HiddenRequestAccepted(bool accepted);

    error NotOwner();
    error MalformedSignature();
    error UnknownNotary(address signer);
    error TestTrustAnchor();
    error ProxyModeRefused();
    error HiddenRequestRefused();
    error MalformedSegments();
    error RangeNotRevealed(uint8 direction, uint32 start, uint32 end);

    constructor() {
        owner = msg.sender;
        emit OwnerChanged(msg.sender);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    function setOwner(address newOwner) external onlyOwner {
        owner = newOwner;
        emit OwnerChanged(newOwner);
    }

    function setNotary(address notary, bool allowed) external onlyOwner {
        isNotary[notary] = allowed;
        emit NotaryAllowed(notary, allowed);
    }

    function setAcceptsTestTrustAnchor(bool accepted) external onlyOwner {
        acceptsTestTrustAnchor = accepted;
        emit TestTrustAnchorAccepted(accepted);
    }

    function setAcceptsProxyMode(bool accepted) external onlyOwner {
        acceptsProxyMode = accepted;
        emit ProxyModeAccepted(accepted);
    }

    function setAcceptsHiddenRequest(bool accepted) external onlyOwner {
        acceptsHiddenRequest = accepted;
        emit HiddenRequestAccepted(accepted);
    }

    /// The EIP-712 digest the notary signed for these fields and revealed segments (an MPC-mode attestation).
    function digest(Attestation calldata a, bytes calldata revealed) public pure returns (bytes32) {
        return typedDigest(ATTESTATION_TYPEHASH, a, revealed);
    }

    /// The same for a proxy-mode attestation.
    function proxyDigest(Attestation calldata a, bytes calldata revealed) public pure returns (bytes32) {
        return typedDigest(PROXY_ATTESTATION_TYPEHASH, a, revealed);
    }

    function typedDigest(bytes32 typehash, Attestation calldata a, bytes calldata revealed) internal pure returns (bytes32) {
        // Encodings of whole words, joined: one abi.encode of all fourteen members is too deep for the stack.
        bytes memory head = abi.encode(typehash, a.requestId, keccak256(bytes(a.serverName)), a.serverPort, a.connectionTime, a.responseTime);
        bytes memory tail = abi.encode(a.notarizedAt, a.sentLength, a.recvLength, a.requestHidden, a.testTrustAnchor, keccak256(revealed));
        bytes memory claims = abi.encode(a.recipient, claimsHash(a.claims));
        return keccak256(abi.encodePacked(hex"1901", DOMAIN_SEPARATOR, keccak256(bytes.concat(head, tail, claims))));
    }

    /// EIP-712's hash of a Claim[]: keccak256 of each claim's hashStruct, in order.
    function claimsHash(Claim[] calldata claims) internal pure returns (bytes32) {
        bytes32[] memory hashes = new bytes32[](claims.length);
        for (uint256 i = 0; i < claims.length; i++) {
            Claim calldata c = claims[i];
            hashes[i] = keccak256(
                abi.encode(
                    CLAIM_TYPEHASH,
                    c.kind,
                    keccak256(bytes(c.subject)),
                    keccak256(bytes(c.op)),
                    keccak256(bytes(c.operand)),
                    c.holds,
                    keccak256(bytes(c.value)),
                    c.commitment
                )
            );
        }
        return keccak256(abi.encodePacked(hashes));
    }

    /// Reverts unless an allowed notary signed exactly these fields and segments; returns that notary.
    /// `signature` is r ‖ s ‖ v (65 bytes, v 27 or 28, low s).
    function verify(Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        public
        view
        returns (address notary)
    {
        return signer(digest(a, revealed), a, signature);
    }

    /// `verify` for a proxy-mode attestation; reverts unless the owner accepts proxy mode.
    function verifyProxy(Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        public
        view
        returns (address notary)
    {
        if (!acceptsProxyMode) revert ProxyModeRefused();
        return signer(proxyDigest(a, revealed), a, signature);
    }

    function signer(bytes32 signedDigest, Attestation calldata a, bytes calldata signature) internal view returns (address notary) {
        if (a.testTrustAnchor && !acceptsTestTrustAnchor) revert TestTrustAnchor();
        if (a.requestHidden && !acceptsHiddenRequest) revert HiddenRequestRefused();
        if (signature.length != 65) revert MalformedSignature();
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) revert MalformedSignature();
        notary = ecrecover(signedDigest, v, r, s);
        if (notary == address(0) || !isNotary[notary]) revert UnknownNotary(notary);
    }

    /// Verifies the attestation, then returns bytes [start, end) of one direction, which must lie inside one
    /// revealed segment (adjacent revealed ranges are always merged into one segment), with what the bytes are
    /// evidence of: the server the TLS certificate proved and its port, when the exchange began and ended, when it
    /// was notarized, whether its request was hidden, and the attestation's digest. A valid attestation of another
    /// server, or an old one, verifies all the same: the dapp checks `serverName`, the port and the times against
    /// what it expects, and uses each `attestationDigest` once.
    function verifiedRange(
        Attestation calldata a,
        bytes calldata revealed,
        bytes calldata signature,
        uint8 direction,
        uint32 start,
        uint32 end
    ) external view returns (bytes memory data, Evidence memory evidence) {
        bytes32 attestationDigest = digest(a, revealed);
        signer(attestationDigest, a, signature);
        return (rangeOf(revealed, direction, start, end), evidenceOf(a, attestationDigest));
    }

    /// `verifiedRange` for a proxy-mode attestation; reverts unless the owner accepts proxy mode.
    function verifiedProxyRange(
        Attestation calldata a,
        bytes calldata revealed,
        bytes calldata signature,
        uint8 direction,
        uint32 start,
        uint32 end
    ) external view returns (bytes memory data, Evidence memory evidence) {
        if (!acceptsProxyMode) revert ProxyModeRefused();
        bytes32 attestationDigest = proxyDigest(a, revealed);
        signer(attestationDigest, a, signature);
        return (rangeOf(revealed, direction, start, end), evidenceOf(a, attestationDigest));
    }

    /// Verifies the attestation and returns its claims with what they are evidence of, in one call: a dapp reads
    /// `claims[i].holds` (or `value`, or `commitment`) after checking `claims[i].subject` and `op`/`operand` are the
    /// statement it wants, and `evidence.recipient` against msg.sender.
    function verifiedClaims(Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        external
        view
        returns (Claim[] memory claims, Evidence memory evidence)
    {
        bytes32 attestationDigest = digest(a, revealed);
        signer(attestationDigest, a, signature);
        return (a.claims, evidenceOf(a, attestationDigest));
    }

    /// `verifiedClaims` for a proxy-mode attestation; reverts unless the owner accepts proxy mode.
    function verifiedProxyClaims(Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        external
        view
        returns (Claim[] memory claims, Evidence memory evidence)
    {
        if (!acceptsProxyMode) revert ProxyModeRefused();
        bytes32 attestationDigest = proxyDigest(a, revealed);
        signer(attestationDigest, a, signature);
        return (a.claims, evidenceOf(a, attestationDigest));
    }

    function evidenceOf(Attestation calldata a, bytes32 attestationDigest) internal pure returns (Evidence memory) {
        return Evidence(a.serverName, a.serverPort, a.connectionTime, a.responseTime, a.notarizedAt, a.requestHidden, a.recipient, attestationDigest);
    }

    /// Bytes [start, end) of `direction` in packed segments; reverts when they are not all revealed.
    /// Internal: it trusts `revealed`, so outside callers go through `verifiedRange`.
    function rangeOf(bytes calldata revealed, uint8 direction, uint32 start, uint32 end)
        internal
        pure
        returns (bytes calldata)
    {
        if (start > end) revert RangeNotRevealed(direction, start, end);
        uint256 cursor = 0;
        while (cursor < revealed.length) {
            if (cursor + SEGMENT_HEADER > revealed.length) revert MalformedSegments();
            uint8 segmentDirection = uint8(revealed[cursor]);
            uint256 segmentStart = uint32(bytes4(revealed[cursor + 1:cursor + 5]));
            uint256 segmentLength = uint32(bytes4(revealed[cursor + 5:cursor + 9]));
            uint256 data = cursor + SEGMENT_HEADER;
            if (data + segmentLength > revealed.length) revert MalformedSegments();
            if (segmentDirection == direction && segmentStart <= start && end <= segmentStart + segmentLength) {
                return revealed[data + (start - segmentStart):data + (end - segmentStart)];
            }
            cursor = data + segmentLength;
        }
        revert RangeNotRevealed(direction, start, end);
    }
}
