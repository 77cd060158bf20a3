// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TlsproofAttestation} from "./TlsproofAttestation.sol";

/// @title Notaries with something at stake.
/// @notice A notary registers the address its EVM attestations recover to with a stake of at least `minimumStake`
/// (the transaction comes from that address: the notary's own key), may ask to exit, and withdraws once
/// `unbondingDelay` has passed since: long enough for anyone holding proof of its equivocation to slash it first.
/// Equivocation is two valid attestations by one notary for one request id that differ (docs/notary.md, "Trust"):
/// an honest notary never makes them, since its ledger refuses a second attestation for a request id. Anyone who
/// submits such a pair takes `REPORTER_SHARE_PERCENT` of the stake; the rest is burned. There is no owner: nobody
/// slashes by fiat, and nothing else is slashed (a missing signature proves nothing: see docs/notary.md).
/// `verifiedQuorumClaims` accepts the claims of a quorum proof: M attestations of the same claims, each by a distinct
/// notary bonded here.
contract NotaryRegistry {
    struct Notary {
        uint256 stake;
        /// When the notary asked to exit (Unix seconds); 0 while it is bonded.
        uint64 exitRequestedAt;
    }

    /// What a quorum's claims are evidence of: the server every attestation proved, and their signers, ascending.
    struct QuorumEvidence {
        string serverName;
        address[] notaries;
    }

    uint256 public constant REPORTER_SHARE_PERCENT = 50;
    /// Where the burned part of a slashed stake goes: an address nobody holds a key to.
    address public constant BURN = 0x000000000000000000000000000000000000dEaD;

    uint256 public immutable minimumStake;
    uint256 public immutable unbondingDelay;
    mapping(address => Notary) public notaries;

    event Registered(address indexed notary, uint256 stake);
    event ExitRequested(address indexed notary, uint64 requestedAt);
    event Withdrawn(address indexed notary, uint256 amount);
    event Slashed(address indexed notary, address indexed reporter, uint256 reward, uint256 burned, bytes16 requestId);

    error StakeTooSmall(uint256 stake, uint256 minimum);
    error Exiting(address notary);
    error NotRegistered(address notary);
    error NotExiting(address notary);
    error StillUnbonding(uint256 until);
    error NotEquivocation();
    error NotBonded(address notary);
    error QuorumNotMet(uint256 signers, uint256 quorum);
    error SignersNotAscending();
    error QuorumDisagrees(uint256 index);
    error RequestNotShown();
    error TestTrustAnchor();
    error TransferFailed();

    constructor(uint256 minimumStake_, uint256 unbondingDelay_) {
        minimumStake = minimumStake_;
        unbondingDelay = unbondingDelay_;
    }

    /// Bonds msg.sender (a notary's attestation address) with the ETH sent, added to what it holds already.
    function register() external payable {
        Notary storage notary = notaries[msg.sender];
        if (notary.exitRequestedAt != 0) revert Exiting(msg.sender);
        notary.stake += msg.value;
        if (notary.stake < minimumStake) revert StakeTooSmall(notary.stake, minimumStake);
        emit Registered(msg.sender, notary.stake);
    }

    /// Stops msg.sender counting as bonded now; its stake stays within a slash's reach for `unbondingDelay`.
    function requestExit() external {
        Notary storage notary = notaries[msg.sender];
        if (notary.stake == 0) revert NotRegistered(msg.sender);
        if (notary.exitRequestedAt != 0) revert Exiting(msg.sender);
        notary.exitRequestedAt = uint64(block.timestamp);
        emit ExitRequested(msg.sender, notary.exitRequestedAt);
    }

    /// Pays msg.sender its stake once `unbondingDelay` has passed since it asked to exit.
    function withdraw() external {
        Notary memory notary = notaries[msg.sender];
        if (notary.exitRequestedAt == 0) revert NotExiting(msg.sender);
        uint256 until = uint256(notary.exitRequestedAt) + unbondingDelay;
        if (block.timestamp < until) revert StillUnbonding(until);
        delete notaries[msg.sender];
        emit Withdrawn(msg.sender, notary.stake);
        pay(msg.sender, notary.stake);
    }

    /// Whether `notary` counts now: its stake at least the minimum, and no exit asked.
    function isBonded(address notary) public view returns (bool) {
        Notary memory n = notaries[notary];
        return n.stake >= minimumStake && n.exitRequestedAt == 0;
    }

    /// Slashes the notary that signed both attestations, for one request id, of different content (each in its mode's
    /// type). The reporter (msg.sender) takes REPORTER_SHARE_PERCENT of the stake; the rest is burned. Reverts for
    /// identical attestations, other request ids, two signers or none, or a notary with no stake.
    function slash(TlsproofAttestation.Signed calldata a, TlsproofAttestation.Signed calldata b) external {
        (bytes32 digestA, address signer) = TlsproofAttestation.check(a);
        (bytes32 digestB, address signerB) = TlsproofAttestation.check(b);
        if (a.attestation.requestId != b.attestation.requestId || digestA == digestB) revert NotEquivocation();
        if (signer == address(0) || signerB != signer) revert NotEquivocation();
        uint256 stake = notaries[signer].stake;
        if (stake == 0) revert NotRegistered(signer);
        delete notaries[signer];
        uint256 reward = (stake * REPORTER_SHARE_PERCENT) / 100;
        emit Slashed(signer, msg.sender, reward, stake - reward, a.attestation.requestId);
        pay(msg.sender, reward);
        pay(BURN, stake - reward);
    }

    /// Verifies a quorum proof's attestations and returns the claims they all state: at least `quorum` of them, by
    /// distinct notaries given in ascending order of address, each bonded now, of one server and one request line
    /// (each shows it whole, from the request's first byte), made for one recipient, none under a test trust anchor.
    /// Reverts otherwise: the same claims of two different requests (another account's balance) are no quorum.
    function verifiedQuorumClaims(TlsproofAttestation.Signed[] calldata signed, uint256 quorum)
        external
        view
        returns (TlsproofAttestation.Claim[] memory claims, QuorumEvidence memory evidence)
    {
        uint256 count = signed.length;
        if (count < quorum || quorum == 0) revert QuorumNotMet(count, quorum);
        TlsproofAttestation.Attestation calldata first = signed[0].attestation;
        Statement memory statement = statementOf(signed[0]);
        address[] memory signers = new address[](count);
        for (uint256 i = 0; i < count; i++) {
            if (signed[i].attestation.testTrustAnchor) revert TestTrustAnchor();
            if (!agrees(signed[i], statement)) revert QuorumDisagrees(i);
            (, address signer) = TlsproofAttestation.check(signed[i]);
            if (!isBonded(signer)) revert NotBonded(signer);
            // Strictly ascending: no notary counts twice.
            if (i > 0 && signer <= signers[i - 1]) revert SignersNotAscending();
            signers[i] = signer;
        }
        return (first.claims, QuorumEvidence(first.serverName, signers));
    }

    /// What every attestation of a quorum must share with the first: its claims, server, recipient and request line.
    struct Statement {
        bytes32 claimsHash;
        bytes32 serverName;
        address recipient;
        uint256 lineLength;
        bytes32 lineHash;
    }

    /// The first attestation's statement; its request line is found here, once (RequestNotShown when it has none).
    function statementOf(TlsproofAttestation.Signed calldata s) private pure returns (Statement memory) {
        TlsproofAttestation.Attestation calldata a = s.attestation;
        bytes calldata line = requestLine(s);
        return Statement(TlsproofAttestation.claimsHash(a.claims), keccak256(bytes(a.serverName)), a.recipient, line.length, keccak256(line));
    }

    function agrees(TlsproofAttestation.Signed calldata s, Statement memory statement) private pure returns (bool) {
        TlsproofAttestation.Attestation calldata a = s.attestation;
        return TlsproofAttestation.claimsHash(a.claims) == statement.claimsHash && keccak256(bytes(a.serverName)) == statement.serverName
            && a.recipient == statement.recipient && showsRequestLine(s, statement.lineLength, statement.lineHash);
    }

    /// The request line an attestation shows: its first revealed segment must be of the request, from its first byte,
    /// and hold the line whole (up to CRLF); a hidden request, or a line with hidden bytes, reverts RequestNotShown.
    function requestLine(TlsproofAttestation.Signed calldata s) private pure returns (bytes calldata) {
        bytes calldata revealed = s.revealed;
        // A segment: uint8 direction ‖ uint32 start ‖ uint32 length ‖ its bytes.
        if (s.attestation.requestHidden || revealed.length < 9 || uint8(revealed[0]) != 0 || uint32(bytes4(revealed[1:5])) != 0) {
            revert RequestNotShown();
        }
        uint256 length = uint32(bytes4(revealed[5:9]));
        if (9 + length > revealed.length) revert RequestNotShown();
        bytes calldata data = revealed[9:9 + length];
        for (uint256 i = 0; i + 1 < data.length; i++) {
            if (data[i] == 0x0d && data[i + 1] == 0x0a) return data[:i];
        }
        revert RequestNotShown();
    }

    /// Whether `s` shows, as its request's first bytes, a line of `length` bytes hashing to `lineHash`, then CRLF:
    /// the first attestation's line (which holds no CRLF, so neither does an equal one).
    function showsRequestLine(TlsproofAttestation.Signed calldata s, uint256 length, bytes32 lineHash) private pure returns (bool) {
        bytes calldata revealed = s.revealed;
        if (s.attestation.requestHidden || revealed.length < 9 + length + 2 || uint8(revealed[0]) != 0 || uint32(bytes4(revealed[1:5])) != 0) {
            return false;
        }
        if (uint32(bytes4(revealed[5:9])) < length + 2 || revealed[9 + length] != 0x0d || revealed[10 + length] != 0x0a) return false;
        return keccak256(revealed[9:9 + length]) == lineHash;
    }

    function pay(address to, uint256 amount) private {
        (bool sent, ) = to.call{value: amount}("");
        if (!sent) revert TransferFailed();
    }
}
