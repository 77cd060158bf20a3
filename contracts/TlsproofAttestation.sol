// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title The tlsproof EVM attestation: its struct, its EIP-712 digest and its signer.
/// @notice A tlsproof notary signs, beside its tlsproof/1 signature, an EIP-712 digest of what it attested
/// (docs/proof-format.md, "EVM attestation"; src/proof/evm-attestation.ts builds the same digest off chain). Each
/// mode signs under its own type name: MPC attestations as `Attestation`, proxy-mode ones as `ProxyAttestation`.
/// TlsproofVerifier and NotaryRegistry both read attestations through this library.
library TlsproofAttestation {
    /// The attested fields, as in the proof body. `revealed` travels beside it.
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

    /// An attestation with what its digest and signer need: its revealed segments, its signature (r ‖ s ‖ v) and its
    /// mode (`proxy`: signed as `ProxyAttestation`).
    struct Signed {
        Attestation attestation;
        bytes revealed;
        bytes signature;
        bool proxy;
    }

    bytes32 internal constant ATTESTATION_TYPEHASH = keccak256(
        "Attestation(bytes16 requestId,string serverName,uint16 serverPort,uint64 connectionTime,uint64 responseTime,"
        "uint64 notarizedAt,uint32 sentLength,uint32 recvLength,bool requestHidden,bool testTrustAnchor,bytes revealed,"
        "address recipient,Claim[] claims)"
        "Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)"
    );
    bytes32 internal constant PROXY_ATTESTATION_TYPEHASH = keccak256(
        "ProxyAttestation(bytes16 requestId,string serverName,uint16 serverPort,uint64 connectionTime,uint64 responseTime,"
        "uint64 notarizedAt,uint32 sentLength,uint32 recvLength,bool requestHidden,bool testTrustAnchor,bytes revealed,"
        "address recipient,Claim[] claims)"
        "Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)"
    );
    bytes32 internal constant CLAIM_TYPEHASH =
        keccak256("Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)");
    /// No chainId or verifyingContract: an attestation states a fact, valid on every chain and in every contract.
    bytes32 internal constant DOMAIN_SEPARATOR = keccak256(
        abi.encode(keccak256("EIP712Domain(string name,string version)"), keccak256("tlsproof"), keccak256("1"))
    );
    /// Half the secp256k1 group order: a larger s is the malleated twin of a valid signature (EIP-2).
    uint256 internal constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    error MalformedSignature();

    /// The EIP-712 digest the notary signed: of an MPC attestation (`proxy` false) or a proxy-mode one.
    function digest(Attestation calldata a, bytes calldata revealed, bool proxy) internal pure returns (bytes32) {
        bytes32 typehash = proxy ? PROXY_ATTESTATION_TYPEHASH : ATTESTATION_TYPEHASH;
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

    /// The digest and signer of a signed attestation (its signer 0 when ecrecover finds no key).
    function check(Signed calldata signed) internal pure returns (bytes32 signedDigest, address notary) {
        signedDigest = digest(signed.attestation, signed.revealed, signed.proxy);
        notary = signer(signedDigest, signed.signature);
    }

    /// The address that signed `signedDigest`: `signature` is r ‖ s ‖ v (65 bytes, v 27 or 28, low s), else it
    /// reverts; 0 when ecrecover finds no key.
    function signer(bytes32 signedDigest, bytes calldata signature) internal pure returns (address) {
        if (signature.length != 65) revert MalformedSignature();
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) revert MalformedSignature();
        return ecrecover(signedDigest, v, r, s);
    }
}
