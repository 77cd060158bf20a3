// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TlsproofAttestation} from "./TlsproofAttestation.sol";

/// @title Checks tlsproof EVM attestations on chain.
/// @notice A tlsproof notary signs, beside its tlsproof/1 signature, an EIP-712 digest of what it attested
/// (TlsproofAttestation). This contract rebuilds that digest from the fields and revealed segments it is given,
/// recovers the signer, accepts only notaries on its owner's allow-list, and serves byte ranges of the verified
/// segments and the claims. NotaryRegistry accepts notaries by their stake instead of an owner's word.
/// Proxy-mode attestations (the notary relayed the connection and saw the response in clear) are signed under
/// another type name, `ProxyAttestation`: `verify` never accepts them; `verifyProxy` does once the owner allows it.
/// A proxy-mode attestation whose request the notary never saw (`requestHidden`) proves the server's answer but not
/// the request it answers (method, URL, Host): refused unless the owner accepts such attestations too.
contract TlsproofVerifier {
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

    bytes32 public constant ATTESTATION_TYPEHASH = TlsproofAttestation.ATTESTATION_TYPEHASH;
    bytes32 public constant PROXY_ATTESTATION_TYPEHASH = TlsproofAttestation.PROXY_ATTESTATION_TYPEHASH;
    bytes32 public constant DOMAIN_SEPARATOR = TlsproofAttestation.DOMAIN_SEPARATOR;
    uint8 public constant SENT = 0;
    uint8 public constant RECV = 1;
    /// Bytes before each segment's data in `revealed`: uint8 direction, uint32 start, uint32 length.
    uint256 private constant SEGMENT_HEADER = 9;

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
    function digest(TlsproofAttestation.Attestation calldata a, bytes calldata revealed) public pure returns (bytes32) {
        return TlsproofAttestation.digest(a, revealed, false);
    }

    /// The same for a proxy-mode attestation.
    function proxyDigest(TlsproofAttestation.Attestation calldata a, bytes calldata revealed) public pure returns (bytes32) {
        return TlsproofAttestation.digest(a, revealed, true);
    }

    /// Reverts unless an allowed notary signed exactly these fields and segments; returns that notary.
    /// `signature` is r ‖ s ‖ v (65 bytes, v 27 or 28, low s).
    function verify(TlsproofAttestation.Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        public
        view
        returns (address notary)
    {
        return signer(digest(a, revealed), a, signature);
    }

    /// `verify` for a proxy-mode attestation; reverts unless the owner accepts proxy mode.
    function verifyProxy(TlsproofAttestation.Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        public
        view
        returns (address notary)
    {
        if (!acceptsProxyMode) revert ProxyModeRefused();
        return signer(proxyDigest(a, revealed), a, signature);
    }

    function signer(bytes32 signedDigest, TlsproofAttestation.Attestation calldata a, bytes calldata signature) internal view returns (address notary) {
        if (a.testTrustAnchor && !acceptsTestTrustAnchor) revert TestTrustAnchor();
        if (a.requestHidden && !acceptsHiddenRequest) revert HiddenRequestRefused();
        notary = TlsproofAttestation.signer(signedDigest, signature);
        if (notary == address(0) || !isNotary[notary]) revert UnknownNotary(notary);
    }

    /// Verifies the attestation, then returns bytes [start, end) of one direction, which must lie inside one
    /// revealed segment (adjacent revealed ranges are always merged into one segment), with what the bytes are
    /// evidence of: the server the TLS certificate proved and its port, when the exchange began and ended, when it
    /// was notarized, whether its request was hidden, and the attestation's digest. A valid attestation of another
    /// server, or an old one, verifies all the same: the dapp checks `serverName`, the port and the times against
    /// what it expects, and uses each `attestationDigest` once.
    function verifiedRange(
        TlsproofAttestation.Attestation calldata a,
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
        TlsproofAttestation.Attestation calldata a,
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
    function verifiedClaims(TlsproofAttestation.Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        external
        view
        returns (TlsproofAttestation.Claim[] memory claims, Evidence memory evidence)
    {
        bytes32 attestationDigest = digest(a, revealed);
        signer(attestationDigest, a, signature);
        return (a.claims, evidenceOf(a, attestationDigest));
    }

    /// `verifiedClaims` for a proxy-mode attestation; reverts unless the owner accepts proxy mode.
    function verifiedProxyClaims(TlsproofAttestation.Attestation calldata a, bytes calldata revealed, bytes calldata signature)
        external
        view
        returns (TlsproofAttestation.Claim[] memory claims, Evidence memory evidence)
    {
        if (!acceptsProxyMode) revert ProxyModeRefused();
        bytes32 attestationDigest = proxyDigest(a, revealed);
        signer(attestationDigest, a, signature);
        return (a.claims, evidenceOf(a, attestationDigest));
    }

    function evidenceOf(TlsproofAttestation.Attestation calldata a, bytes32 attestationDigest) internal pure returns (Evidence memory) {
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
